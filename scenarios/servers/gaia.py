"""Introspection, GAIA-style: which MCP servers is this agent connected to, and are they up."""

from __future__ import annotations

import argparse

from scenarios.servers._sdk import MCPServer, ToolError, serve


def build(attached: list[str]) -> MCPServer:
    server = MCPServer("gaia", instructions="Facts about the agent's own MCP connections.")

    @server.tool()
    def list_mcp_servers() -> str:
        """List the names of the MCP servers this assistant is currently connected to."""
        return "\n".join(attached)

    @server.tool()
    def server_status(name: str) -> str:
        """Report whether one connected MCP server is up."""
        if name not in attached:
            raise ToolError(f"not connected to a server named {name!r}; see list_mcp_servers")
        return f"{name}: connected"

    return server


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--attached", default="", help="comma-separated server names")


if __name__ == "__main__":
    serve(lambda a: build([s for s in a.attached.split(",") if s]), add_args=_args)
