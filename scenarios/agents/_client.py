"""What the bundled agents share: the trial's config file read, a session per server opened."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def config_path(argv_path: str | None) -> Path:
    """The config file: the path given, else FARM_MCP_CONFIG (as the farm sets it)."""
    path = argv_path or os.environ.get("FARM_MCP_CONFIG")
    if not path:
        raise SystemExit("no MCP config file: pass its path, or set FARM_MCP_CONFIG")
    return Path(path)


def servers_of(config: Path) -> dict[str, dict[str, Any]]:
    servers: dict[str, dict[str, Any]] = json.loads(config.read_text(encoding="utf-8"))[
        "mcpServers"
    ]
    return servers


@asynccontextmanager
async def sessions(config: Path, **hooks: Any) -> AsyncIterator[dict[str, ClientSession]]:
    """An initialised session with every server the config file names: by `url`, or by
    `command` (with `args` and `env`), as desktop clients read it. `hooks` go to each
    ClientSession (`message_handler`, `elicitation_callback`)."""
    async with AsyncExitStack() as stack:
        opened: dict[str, ClientSession] = {}
        for name, server in servers_of(config).items():
            if "url" in server:
                transport = streamable_http_client(server["url"])
            else:
                params = StdioServerParameters(
                    command=server["command"], args=server.get("args", []), env=server.get("env")
                )
                transport = stdio_client(params)
            read, write = await stack.enter_async_context(transport)
            session = await stack.enter_async_context(ClientSession(read, write, **hooks))
            await session.initialize()
            opened[name] = session
        yield opened


async def tool_owners(opened: dict[str, ClientSession]) -> dict[str, tuple[str, Any]]:
    """Each tool's name, with the server that lists it and its listing."""
    owners: dict[str, tuple[str, Any]] = {}
    for name, session in opened.items():
        for tool in (await session.list_tools()).tools:
            owners[tool.name] = (name, tool)
    return owners


def result_text(result: Any) -> str:
    return "\n".join(getattr(part, "text", "") for part in result.content)
