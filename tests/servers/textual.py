"""Test-only MCP server that reports its failures as text (`Error: …` with isError false), as
many real servers do, and whose report is longer than a result the model is shown."""

from __future__ import annotations

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    serve,
)

FILLER = "All systems nominal. " * 400  # about 8,400 characters


def build() -> MCPServer:
    server = MCPServer(
        "textual", instructions="Keys are lower-case names; every value is stored as text."
    )
    entries: dict[str, str] = {"alpha": "42", "beta": "7"}

    @server.tool()
    def lookup(key: str) -> str:
        """Look up the value stored under a key."""
        if key not in entries:
            return f"Error: no entry named {key!r}"
        return f"{key} = {entries[key]}"

    @server.tool()
    def store(key: str, value: str) -> str:
        """Store a value under a key."""
        if not key.strip():
            return "Database error: a key cannot be empty"
        entries[key] = value
        return f"stored {key}"

    @server.tool()
    def full_report() -> str:
        """The full status report; its reference code is on the last line."""
        return f"{FILLER}\nReference code: RX-4471"

    @server.tool()
    def open_ticket(reference: str) -> str:
        """Open a ticket for a report's reference code."""
        return f"ticket opened for {reference}"

    return server


if __name__ == "__main__":
    serve(lambda _a: build())
