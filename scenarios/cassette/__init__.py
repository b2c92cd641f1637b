"""Cassettes: recorded MCP exchanges of a server that cannot run here, served in its place."""

from mcp_farm.scenarios.cassette.launch import replay_definition
from mcp_farm.scenarios.cassette.tape import (
    MISS_META,
    Answer,
    Cassette,
    Exchange,
    RecordedTool,
    Relisted,
    ToolList,
    ToolsChanged,
    add_to_cassette,
    call_key,
    load_cassette,
    locked,
    masked,
    merged,
    recorded_answer,
    recorded_tool,
    write_cassette,
)

__all__ = [
    "MISS_META",
    "Answer",
    "Cassette",
    "Exchange",
    "RecordedTool",
    "Relisted",
    "ToolList",
    "ToolsChanged",
    "add_to_cassette",
    "call_key",
    "load_cassette",
    "locked",
    "masked",
    "merged",
    "recorded_answer",
    "recorded_tool",
    "replay_definition",
    "write_cassette",
]
