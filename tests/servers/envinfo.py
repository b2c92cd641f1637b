"""Test-only MCP server that tells what environment it was started with: a variable's sha256,
the files of the folder `DATA_DIR` names, and (a careless server) a variable's value itself."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    serve,
)


def build() -> MCPServer:
    server = MCPServer("envinfo")

    @server.tool()
    def variable_digest(name: str) -> str:
        """The sha256 of an environment variable's value, or `unset`."""
        value = os.environ.get(name)
        return "unset" if value is None else hashlib.sha256(value.encode()).hexdigest()

    @server.tool()
    def variable_value(name: str) -> str:
        """An environment variable's value, as a careless server might print a token."""
        return f"{name}={os.environ.get(name, '')}"

    @server.tool()
    def data_files() -> str:
        """The files in the folder DATA_DIR names, one per line."""
        return "\n".join(sorted(p.name for p in Path(os.environ["DATA_DIR"]).iterdir()))

    return server


if __name__ == "__main__":
    serve(lambda _a: build())
