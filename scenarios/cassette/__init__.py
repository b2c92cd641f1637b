"""Cassettes: recorded MCP exchanges of a server that cannot run here, served in its place."""

from mcp_farm.scenarios.cassette.launch import replay_definition
from mcp_farm.scenarios.cassette.tape import (
    MISS_META,
    Answer,
    Cassette,
    Exchange,
    RecordedTool,
    call_key,
    load_cassette,
    merged,
    write_cassette,
)

__all__ = [
    "MISS_META",
    "Answer",
    "Cassette",
    "Exchange",
    "RecordedTool",
    "call_key",
    "load_cassette",
    "merged",
    "replay_definition",
    "write_cassette",
]
