"""A test-only MCP server whose tool never answers, and one that dies on start."""

from __future__ import annotations

import sys
import time

from scenarios.servers._sdk import MCPServer, serve


def build() -> MCPServer:
    server = MCPServer("slow")

    @server.tool()
    def fetch_report(report_id: str) -> str:
        """Fetch a finance report by id."""
        time.sleep(3600)
        return "never"

    return server


if __name__ == "__main__":
    if "--crash" in sys.argv:
        sys.exit(3)
    serve(lambda _a: build())
