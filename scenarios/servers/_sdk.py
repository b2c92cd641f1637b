"""The one place the MCP server class is imported (the SDK renamed it between 1.x and 2.x)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

__all__ = ["MCPServer", "ToolError", "serve"]


def serve(
    build: Callable[[argparse.Namespace], MCPServer],
    argv: list[str] | None = None,
    add_args: Callable[[argparse.ArgumentParser], None] | None = None,
) -> None:
    """Parse the common `--transport/--host/--port` options and run the server."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    if add_args:
        add_args(parser)
    args = parser.parse_args(argv)
    server = build(args)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=args.host, port=args.port)
