"""Test-only MCP server that keeps each MCP session's memos apart, as `reset: session` promises.

Over HTTP (`--transport http --port N`) the memos are kept per `Mcp-Session-Id`, so a new
session starts with none whatever earlier sessions added; over stdio the process is the one
session. The tools are the memo server's (tests/servers/memo.py) without `forget_all`: the only
way back to an empty list is a new session.
"""

from __future__ import annotations

from collections import defaultdict

from mcp.server.mcpserver import Context

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    serve,
)

SESSION_HEADER = "mcp-session-id"


def build() -> MCPServer:
    server = MCPServer("session-memo")
    memos: defaultdict[str, list[str]] = defaultdict(list)

    def kept(ctx: Context) -> list[str]:
        # stdio carries no headers: its one process is its one session.
        headers = ctx.headers or {}
        return memos[headers.get(SESSION_HEADER, "stdio")]

    @server.tool()
    def add_memo(text: str, ctx: Context) -> str:
        """Keep a short memo; returns its number."""
        if not text.strip():
            raise ToolError("a memo needs some text")
        mine = kept(ctx)
        mine.append(text)
        return f"memo {len(mine)} kept"

    @server.tool()
    def list_notes(ctx: Context) -> str:
        """List the memos kept so far in this session, one per line."""
        mine = kept(ctx)
        return "\n".join(f"{i}. {m}" for i, m in enumerate(mine, 1)) or "no memos yet"

    return server


if __name__ == "__main__":
    serve(lambda _a: build())
