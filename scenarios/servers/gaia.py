"""Introspection, GAIA-style: which MCP servers is this agent connected to, and what they offer.

`list_tools` answers truthfully: it starts the named server from the server catalogue (on a
scratch copy of its fixture folder) and asks it, once per server per process.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Tool, ToolAnnotations

from mcp_farm.scenarios.catalog import (
    FIXTURES_DIR,
    ROOT,
    server_catalog,
)
from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    serve,
)
from mcp_farm.schema import (
    ServerDef,
    fill_placeholders,
)

logger = logging.getLogger(__name__)
READ_ONLY = ToolAnnotations(read_only_hint=True)
PROBE_TIMEOUT_S = 20.0


async def probe(server: ServerDef, attached: list[str]) -> list[Tool]:
    """Start (or reach) one server, list its tools, and stop it again."""
    with tempfile.TemporaryDirectory(prefix=f"gaia-{server.name}-") as scratch:
        sandbox = Path(scratch) / "sandbox"
        if server.sandbox:
            shutil.copytree(FIXTURES_DIR / server.sandbox, sandbox)
        with anyio.fail_after(PROBE_TIMEOUT_S):
            if server.transport == "http":
                assert server.url is not None
                async with (
                    streamable_http_client(server.url) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    return list((await session.list_tools()).tools)
            # The same placeholders the farm's server pool fills in (workers/mcp/pool/placeholders.py).
            values = {
                "python": sys.executable,
                "root": str(ROOT.parent),
                "sandbox": str(sandbox),
                "attached": ",".join(attached),
            }
            argv = [fill_placeholders(a, values) for a in server.command or []]
            params = StdioServerParameters(
                command=argv[0], args=argv[1:], env=dict(server.env) or None, cwd=ROOT.parent
            )
            with open(Path(scratch) / "stderr.log", "w", encoding="utf-8") as errlog:
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    return list((await session.list_tools()).tools)


def tool_lines(tools: list[Tool]) -> str:
    return "\n".join(f"{t.name}: {(t.description or '').strip().splitlines()[0]}" for t in tools)


def build(attached: list[str]) -> MCPServer:
    app = MCPServer("gaia", instructions="Facts about the agent's own MCP connections.")
    known: dict[str, list[Tool]] = {}

    def connected(name: str) -> str:
        key = name.strip()
        if key not in attached:
            raise ToolError(f"not connected to a server named {name!r}; see list_mcp_servers")
        return key

    @app.tool(annotations=READ_ONLY)
    def list_mcp_servers() -> str:
        """List the names of the MCP servers this assistant is currently connected to."""
        return "\n".join(attached)

    @app.tool(annotations=READ_ONLY)
    def server_status(name: str) -> str:
        """Report whether one connected MCP server is up."""
        return f"{connected(name)}: connected"

    @app.tool(annotations=READ_ONLY)
    async def list_tools(server: str) -> str:
        """List the tools one connected MCP server offers, each with a one-line description."""
        key = connected(server)
        if key == "gaia":
            return tool_lines(await app.list_tools())
        if key not in known:
            catalog = server_catalog()
            if key not in catalog:
                raise ToolError(f"{key} is connected but not in the server catalogue")
            try:
                known[key] = await probe(catalog[key], attached)
            except Exception as exc:  # any failure to reach it: the model hears it is down
                logger.exception("probing %s failed", key)
                raise ToolError(f"could not reach {key}: {type(exc).__name__}") from exc
        return tool_lines(known[key])

    @app.tool(annotations=READ_ONLY)
    def list_available_servers() -> str:
        """List every MCP server in the catalogue that could be installed, connected or not."""
        catalog = server_catalog()
        return "\n".join(
            f"{name}{' (connected)' if name in attached else ''}: {s.description}"
            for name, s in sorted(catalog.items())
        )

    return app


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--attached", default="", help="comma-separated server names")


if __name__ == "__main__":
    serve(lambda a: build([s for s in a.attached.split(",") if s]), add_args=_args)
