"""MCP servers kept running between trials, with their state reset per trial.

Starting a stdio server costs about half a second; a call on a live session about a
millisecond. So each worker process keeps the servers it has started, lends one to a trial at
a time, and before lending it again resets its sandbox folder in place (the server reads the
folder on every call). A server that failed, hung or belongs to a trial that ended badly is
stopped, not lent again; a server declared `reuse: false` is started fresh for every trial.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Tool

from scenarios import FIXTURES_DIR
from schema import ServerDef
from workers.errors import InfraError

logger = logging.getLogger(__name__)

MAX_IDLE = 16
"""Idle servers kept per process and trial slot (`Settings.sessions`); the least recently
used beyond that are stopped."""

REPO_ROOT = FIXTURES_DIR.parents[1]
"""Where `{root}` points: the folder that holds the `scenarios` package (a checkout's root),
so a command can name a project-local install such as `.tools/` whatever the working folder."""


@dataclass(eq=False)
class LiveServer:
    """One running server and its session, owned by a keeper task in the pool's task group."""

    key: str
    server: ServerDef
    session: ClientSession
    tools: list[Tool]
    sandbox: Path | None
    stop: anyio.Event = field(default_factory=anyio.Event)
    dirty: bool = False


def _expand(arg: str, sandbox: Path | None, attached: list[str]) -> str:
    return (
        arg.replace("{python}", sys.executable)
        .replace("{root}", str(REPO_ROOT))
        .replace("{sandbox}", str(sandbox) if sandbox else "")
        .replace("{attached}", ",".join(attached))
    )


def _key(server: ServerDef, attached: list[str]) -> str:
    command = [_expand(a, None, attached) for a in server.command or []]
    return json.dumps([server.name, command, server.url, server.env], sort_keys=True)


def reset_sandbox(server: ServerDef, target: Path) -> None:
    """Make `target` a fresh copy of the server's fixture folder."""
    assert server.sandbox is not None
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(FIXTURES_DIR / server.sandbox, target)


def describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer to initialize/list_tools in time"
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


class ServerPool:
    """The servers of one worker process. Lend with `acquire`, give back with `release`."""

    def __init__(
        self, tg: TaskGroup, root: Path, start_timeout_s: float, sessions: int = 1
    ) -> None:
        self._tg = tg
        self.max_idle = MAX_IDLE * sessions
        self.root = root
        self.start_timeout_s = start_timeout_s
        self._idle: list[LiveServer] = []
        self._count = 0
        self.started = 0
        """Servers started so far (a benchmark and tests read it)."""
        root.mkdir(parents=True, exist_ok=True)
        self.log_path = root / "servers.log"
        self._errlog: TextIO = self.log_path.open("a", encoding="utf-8")

    async def acquire(self, server: ServerDef, attached: list[str]) -> LiveServer:
        """A started, initialised server for one trial, its sandbox fresh; InfraError if not."""
        key = _key(server, attached)
        for live in self._idle:
            if live.key == key:
                self._idle.remove(live)
                if live.dirty and live.sandbox is not None:
                    reset_sandbox(server, live.sandbox)
                    live.dirty = False
                return live
        return await self._start(server, key, attached)

    def release(self, live: LiveServer, *, healthy: bool, dirty: bool = True) -> None:
        """Take a server back after a trial; stop it unless it can safely serve the next one.
        `dirty`: the trial may have changed its sandbox, so reset it before lending it again."""
        if not healthy or not live.server.reuse:
            live.stop.set()
            return
        live.dirty = live.dirty or (dirty and live.sandbox is not None)
        self._idle.append(live)
        while len(self._idle) > self.max_idle:
            self._idle.pop(0).stop.set()

    def close(self) -> None:
        """Stop every idle server (lent ones stop when released unhealthy or at shutdown)."""
        for live in self._idle:
            live.stop.set()
        self._idle.clear()
        self._errlog.close()

    async def _start(self, server: ServerDef, key: str, attached: list[str]) -> LiveServer:
        self._count += 1
        sandbox = None
        if server.sandbox:
            sandbox = self.root / f"{server.name}-{self._count}"
            reset_sandbox(server, sandbox)
        try:
            live: LiveServer = await self._tg.start(self._keep, server, key, sandbox, attached)
        except Exception as exc:  # any start failure is the infrastructure's, not the model's
            if sandbox is not None:
                shutil.rmtree(sandbox, ignore_errors=True)
            raise InfraError(
                f"MCP server {server.name!r} failed to start: {describe(exc)} "
                f"(its stderr is in {self.log_path})"
            ) from exc
        self.started += 1
        return live

    async def _keep(
        self,
        server: ServerDef,
        key: str,
        sandbox: Path | None,
        attached: list[str],
        *,
        task_status: TaskStatus[LiveServer],
    ) -> None:
        """Own one server from start to stop, so its contexts open and close in one task."""
        started = False
        try:
            async with _open(server, sandbox, attached, self._errlog) as session:
                with anyio.fail_after(self.start_timeout_s):
                    await session.initialize()
                    listed = await session.list_tools()
                live = LiveServer(key, server, session, list(listed.tools), sandbox)
                task_status.started(live)
                started = True
                await live.stop.wait()
        except Exception:
            if not started:
                raise
            # A server that died while lent: its trial sees the failure; the pool carries on.
            logger.warning("MCP server %s stopped with an error", server.name, exc_info=True)
        finally:
            if started and sandbox is not None:
                shutil.rmtree(sandbox, ignore_errors=True)


@asynccontextmanager
async def _open(
    server: ServerDef, sandbox: Path | None, attached: list[str], errlog: TextIO
) -> AsyncIterator[ClientSession]:
    """A session with one server, over stdio or streamable HTTP."""
    if server.transport == "stdio":
        argv = [_expand(a, sandbox, attached) for a in server.command or []]
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(server.env) or None)
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            yield session
    else:
        assert server.url is not None
        async with (
            streamable_http_client(server.url) as (read, write),
            ClientSession(read, write) as session,
        ):
            yield session
