"""Test-only MCP servers: a tool that never answers, one that takes a few seconds, and a
server that dies on start."""

from __future__ import annotations

import sys
import time

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    serve,
)

SUMMARY_SECONDS = 4.0


def build() -> MCPServer:
    server = MCPServer("slow")

    @server.tool()
    def fetch_report(report_id: str) -> str:
        """Fetch a finance report by id."""
        time.sleep(3600)
        return "never"

    @server.tool()
    def fetch_summary(report_id: str) -> str:
        """Fetch the summary of a finance report by id (takes a few seconds)."""
        time.sleep(SUMMARY_SECONDS)
        return f"Report {report_id}: revenue 1,200"

    return server


if __name__ == "__main__":
    if "--crash" in sys.argv:
        sys.exit(3)
    serve(lambda _a: build())
