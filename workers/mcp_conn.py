"""A trial's view of its MCP servers: sessions lent by the pool and the tools they offer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from mcp import ClientSession

from schema import ServerDef
from workers.pool import LiveServer, ServerPool
from workers.toolspec import ToolSpec


@dataclass
class Connected:
    """The live sessions of one trial and the tools they offer, by the name the model sees."""

    sessions: dict[str, ClientSession]
    tools: dict[str, ToolSpec]
    touched: set[str] = field(default_factory=set)
    """Servers that had a call that may have changed their state."""


def shown_name(server: str, tool: str, naming: str) -> str:
    return f"{server}__{tool}" if naming == "server_prefixed" else tool


@asynccontextmanager
async def connect(
    servers: list[ServerDef], pool: ServerPool, naming: str
) -> AsyncIterator[Connected]:
    """Borrow every server the trial needs; give them back healthy only if the trial ended
    without an exception (a timeout, a crash or a cancellation stops them instead)."""
    attached = [s.name for s in servers]
    lent: list[LiveServer] = []
    healthy = False
    connected = Connected(sessions={}, tools={})
    try:
        for server in servers:
            lent.append(await pool.acquire(server, attached))
        for live in lent:
            connected.sessions[live.server.name] = live.session
            for tool in live.tools:
                name = shown_name(live.server.name, tool.name, naming)
                connected.tools[name] = ToolSpec(
                    shown_name=name,
                    server=live.server.name,
                    tool=tool.name,
                    description=tool.description or "",
                    input_schema=dict(tool.input_schema or {}),
                    read_only=bool(tool.annotations and tool.annotations.read_only_hint),
                )
        yield connected
        healthy = True
    finally:
        for live in lent:
            pool.release(live, healthy=healthy, dirty=live.server.name in connected.touched)


def result_text(result: Any) -> str:
    """The text of a CallToolResult (text blocks joined; other blocks named by type)."""
    parts = []
    for block in result.content:
        text = getattr(block, "text", None)
        parts.append(text if text is not None else f"[{getattr(block, 'type', 'content')}]")
    return "\n".join(parts)
