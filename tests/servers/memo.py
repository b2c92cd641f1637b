"""Test-only MCP server that keeps its memos in memory: nothing exists until a trial's setup
calls add some. Its `list_notes` shares a name with the notes fixture server's tool. Over HTTP
(`--transport http --port N`) one list serves every session, as many real servers do, and
`forget_all` clears it."""

from __future__ import annotations

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    serve,
)


def build() -> MCPServer:
    server = MCPServer("memo")
    memos: list[str] = []

    @server.tool()
    def add_memo(text: str) -> str:
        """Keep a short memo; returns its number."""
        if not text.strip():
            raise ToolError("a memo needs some text")
        memos.append(text)
        return f"memo {len(memos)} kept"

    @server.tool()
    def forget_all() -> str:
        """Forget every memo."""
        memos.clear()
        return "all memos forgotten"

    @server.tool()
    def list_notes() -> str:
        """List the memos kept so far, one per line."""
        return "\n".join(f"{i}. {m}" for i, m in enumerate(memos, 1)) or "no memos yet"

    return server


if __name__ == "__main__":
    serve(lambda _a: build())
