"""The live server behind a cassette that records new episodes (`record: new_episodes`).

The cassette server starts it at the first call the cassette does not hold (or, for a cassette
not yet written, to list its tools), keeps the one session for the rest of its own session,
and closes it when it stops. A task of its own owns the connection, so every handler can call
through it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Tool

START_TIMEOUT_S = 60.0
"""Seconds the live server may take to start and answer `initialize`."""


@dataclass(frozen=True)
class LiveLaunch:
    """How to reach the live server: a command over stdio, or a streamable-HTTP URL."""

    command: list[str] = field(default_factory=list)
    url: str | None = None


class LiveUnavailable(Exception):
    """The live server could not be started or reached; its message says why."""


@asynccontextmanager
async def _session(launch: LiveLaunch) -> AsyncIterator[ClientSession]:
    if launch.url is not None:
        async with (
            streamable_http_client(launch.url) as (read, write),
            ClientSession(read, write) as session,
        ):
            yield session
        return
    # The whole environment: the farm gave this process the definition's `env` for the live
    # server, and a stdio client passes on only a few variables by default.
    params = StdioServerParameters(
        command=launch.command[0], args=launch.command[1:], env=dict(os.environ)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        yield session


class LiveLink:
    """One session with the live server, opened on first use and held by a task of `tg`."""

    def __init__(self, tg: TaskGroup, launch: LiveLaunch) -> None:
        self.tg, self.launch = tg, launch
        self.session: ClientSession | None = None
        self.problem = ""
        self.lock = anyio.Lock()
        self.closed = anyio.Event()

    async def _opened(self) -> ClientSession:
        async with self.lock:
            if self.session is None and not self.problem:
                ready = anyio.Event()
                self.tg.start_soon(self._hold, ready)
                await ready.wait()
        if self.session is None:
            raise LiveUnavailable(self.problem)
        return self.session

    async def _hold(self, ready: anyio.Event) -> None:
        try:
            async with _session(self.launch) as session:
                with anyio.fail_after(START_TIMEOUT_S):
                    await session.initialize()
                self.session = session
                ready.set()
                await self.closed.wait()
        except Exception as exc:  # whatever stops the start: reported on the call that needed it
            self.problem = f"the live server did not start: {type(exc).__name__}: {exc}"
        finally:
            self.session = None
            ready.set()

    async def call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        result = await (await self._opened()).call_tool(name, arguments)
        if not isinstance(result, CallToolResult):
            raise LiveUnavailable(f"the live server asked for input on {name}, not recorded")
        return result

    async def tools(self) -> list[Tool]:
        return list((await (await self._opened()).list_tools()).tools)
