"""Connections to a trial's MCP servers, over stdio or streamable HTTP, through the official SDK."""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from scenarios import FIXTURES_DIR
from schema import ServerDef
from workers.errors import InfraError
from workers.toolspec import ToolSpec


@dataclass
class Connected:
    """The live sessions of one trial and the tools they offer, by the name the model sees."""

    sessions: dict[str, ClientSession]
    tools: dict[str, ToolSpec]


def _expand(arg: str, sandbox: Path | None, attached: list[str]) -> str:
    return (
        arg.replace("{python}", sys.executable)
        .replace("{sandbox}", str(sandbox) if sandbox else "")
        .replace("{attached}", ",".join(attached))
    )


def make_sandbox(server: ServerDef, trial_dir: Path) -> Path | None:
    """A fresh copy of the server's fixture folder for this trial (None if it needs none)."""
    if not server.sandbox:
        return None
    target = trial_dir / server.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(FIXTURES_DIR / server.sandbox, target)
    return target


async def _open(
    stack: AsyncExitStack,
    server: ServerDef,
    sandbox: Path | None,
    attached: list[str],
    errlog: TextIO,
) -> ClientSession:
    if server.transport == "stdio":
        assert server.command is not None
        argv = [_expand(a, sandbox, attached) for a in server.command]
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(server.env) or None)
        read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    else:
        assert server.url is not None
        read, write = await stack.enter_async_context(streamable_http_client(server.url))
    return await stack.enter_async_context(ClientSession(read, write))


def shown_name(server: str, tool: str, naming: str) -> str:
    return f"{server}__{tool}" if naming == "server_prefixed" else tool


@asynccontextmanager
async def connect(
    servers: list[ServerDef], trial_dir: Path, naming: str, start_timeout_s: float
) -> AsyncIterator[Connected]:
    """Start/attach every server, initialise it and list its tools; InfraError if one fails."""
    attached = [s.name for s in servers]
    trial_dir.mkdir(parents=True, exist_ok=True)
    with (trial_dir / "servers.log").open("a", encoding="utf-8") as errlog:
        async with AsyncExitStack() as stack:
            connected = Connected(sessions={}, tools={})
            for server in servers:
                try:
                    session = await _open(
                        stack, server, make_sandbox(server, trial_dir), attached, errlog
                    )
                    with anyio.fail_after(start_timeout_s):
                        await session.initialize()
                        listed = await session.list_tools()
                except (OSError, TimeoutError, Exception) as exc:  # any start failure is infra
                    raise InfraError(
                        f"MCP server {server.name!r} failed to start: {_describe(exc)} "
                        f"(its stderr is in {trial_dir / 'servers.log'})"
                    ) from exc
                connected.sessions[server.name] = session
                for tool in listed.tools:
                    name = shown_name(server.name, tool.name, naming)
                    connected.tools[name] = ToolSpec(
                        shown_name=name,
                        server=server.name,
                        tool=tool.name,
                        description=tool.description or "",
                        input_schema=dict(tool.input_schema or {}),
                    )
            yield connected


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer to initialize/list_tools in time"
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


def result_text(result: Any) -> str:
    """The text of a CallToolResult (text blocks joined; other blocks named by type)."""
    parts = []
    for block in result.content:
        text = getattr(block, "text", None)
        parts.append(text if text is not None else f"[{getattr(block, 'type', 'content')}]")
    return "\n".join(parts)
