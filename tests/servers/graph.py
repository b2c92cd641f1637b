"""Test-only MCP server shaped like an older knowledge-graph server: a call on an entity it
does not know is answered with a JSON-RPC error (a protocol error), not an error result.
`--forgetful` starts it knowing no entity (a changed server, for replay); `forget_server`
makes the process exit in the middle of a call (a server that dies, not one that refuses)."""

from __future__ import annotations

import argparse
import json
import os

from mcp.shared.exceptions import MCPError

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    serve,
)

INTERNAL_ERROR = -32603


def build(args: argparse.Namespace) -> MCPServer:
    server = MCPServer("graph")
    known = {} if args.forgetful else {"Alice": ["works at Acme", "likes tea"]}

    @server.tool()
    def open_nodes(names: list[str]) -> str:
        """The named entities and what is known about each, as JSON."""
        missing = [n for n in names if n not in known]
        if missing:
            raise MCPError(code=INTERNAL_ERROR, message=f"Entity with name {missing[0]} not found")
        return json.dumps({n: known[n] for n in names})

    @server.tool()
    def forget_server() -> str:
        """Stop the graph server at once."""
        os._exit(1)

    return server


def _flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--forgetful", action="store_true")


if __name__ == "__main__":
    serve(build, add_args=_flags)
