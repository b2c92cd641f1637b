"""The pool itself: lending a started server to one trial, taking it back, resetting its sandbox, stopping it."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp import ClientSession
from mcp.types import Tool

from mcp_farm.scenarios import sandbox_source
from mcp_farm.scenarios.cassette import replay_definition
from mcp_farm.schema import ServerDef, ServerStart, absolute_folder
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.elicit import ElicitHolder
from mcp_farm.workers.mcp.pool.changes import ListChanges, follow_changes
from mcp_farm.workers.mcp.pool.placeholders import Launch, _key, launch, shared_launch
from mcp_farm.workers.mcp.pool.session import (
    Spawned,
    StdoutNoise,
    handshake,
    how_started,
    open_session,
)
from mcp_farm.workers.mcp.shared import (
    SharedProcess,
    free_port,
    keep_process,
)
from mcp_farm.workers.startclock import start_deadline

logger = logging.getLogger(__name__)

MAX_IDLE = 16
"""Idle servers kept per process and trial slot (`Settings.sessions`); the least recently
used beyond that are stopped."""


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
    process: SharedProcess | None = None
    """The shared process this session is on; None: the server is a process of its own."""
    instructions: str = ""
    """What the server said about itself when the session opened (the `instructions` of
    its initialize or discover reply), shown to the model as real clients show it."""
    noise: StdoutNoise | None = None
    """Stray lines a stdio server wrote to stdout."""
    changes: ListChanges = field(default_factory=ListChanges)
    """The server's tool-list change notifications."""
    elicit: ElicitHolder | None = None
    """Answers the server's elicitation requests from the script of the trial holding it."""
    started: ServerStart = "fresh"
    """How the server's process started (a trial's provenance keeps it)."""


def reset_sandbox(server: ServerDef, target: Path) -> None:
    """Make `target` a fresh copy of the server's sandbox folder."""
    source = sandbox_source(server)
    assert source is not None
    if target.exists():
        shutil.rmtree(target)
    inside = target.resolve()
    if not inside.is_relative_to(source.resolve()):
        shutil.copytree(source, target)
        return

    # A user's folder may hold the farm's data folder, and so the copy itself: copying that
    # too would recurse until the path is too long.
    def holds_target(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if inside.is_relative_to(Path(folder, n).resolve())]

    shutil.copytree(source, target, ignore=holds_target)


def start_failure(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer to initialize (or discover)/list_tools in time"
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(start_failure(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


class ServerPool:
    """The servers of one worker process. Lend with `acquire`, give back with `release`.

    With `sessions` above one, a server that declares a `shared:` launch runs as one process
    for the pool, and each trial gets a session of its own on it (workers/mcp/shared.py)."""

    def __init__(
        self,
        tg: TaskGroup,
        root: Path,
        start_timeout_s: float,
        sessions: int = 1,
        environ: Mapping[str, str] | None = None,
        fork: bool = True,
    ) -> None:
        self._tg = tg
        self.fork = fork
        """Start Python stdio servers as forks of a warm interpreter (Settings.server_fork)."""
        # `{env:VAR}` is read from the worker's own environment when a server starts (that is
        # its meaning), so the process environment is the default; tests pass their own.
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self.max_idle = MAX_IDLE * sessions
        self.share = sessions > 1
        self.root = absolute_folder(root)
        """Where the sandboxes lie: absolute, as every path handed to a server is."""
        self.start_timeout_s = start_timeout_s
        self._idle: list[LiveServer] = []
        self._shared: dict[str, SharedProcess] = {}
        self._starting = anyio.Lock()
        self._count = 0
        self.started = 0
        """Servers started so far (a benchmark and tests read it)."""
        self.sessions_opened = 0
        """Sessions opened on shared processes so far."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.log_path = self.root / "servers.log"
        self._errlog: TextIO = self.log_path.open("a", encoding="utf-8")

    async def acquire(self, server: ServerDef, attached: list[str]) -> LiveServer:
        """A started, initialised server for one trial, its sandbox fresh; InfraError if not."""
        server = replay_definition(server)  # a `replay:` server is the farm's cassette server
        key = _key(server, attached)
        for live in self._idle:
            if live.key == key:
                self._idle.remove(live)
                if live.dirty and live.sandbox is not None:
                    try:
                        # Copying a fixture folder takes milliseconds of disk work: off the
                        # event loop, so the other sessions of a threads worker go on meanwhile.
                        await anyio.to_thread.run_sync(reset_sandbox, server, live.sandbox)
                    except BaseException:  # cancelled or failed midway: never lend it again
                        live.stop.set()
                        raise
                    live.dirty = False
                return live
        return await self._start(server, key, attached)

    def release(self, live: LiveServer, *, healthy: bool, dirty: bool = True) -> None:
        """Take a server back after a trial; stop it unless it can safely serve the next one.
        `dirty`: the trial may have changed its sandbox, so reset it before lending it again."""
        on_dead_process = live.process is not None and not live.process.alive
        # `reset: session` promises only that a new session starts clean: lending this one to
        # the next trial would hand it the state this trial left.
        new_session = live.server.reset == "session"
        if not healthy or not live.server.reuse or on_dead_process or new_session:
            live.stop.set()
            return
        live.dirty = live.dirty or (dirty and live.sandbox is not None)
        self._idle.append(live)
        while len(self._idle) > self.max_idle:
            self._idle.pop(0).stop.set()

    def close(self) -> None:
        """Stop every idle server and shared process (lent ones stop when released unhealthy
        or at shutdown)."""
        for live in self._idle:
            live.stop.set()
        self._idle.clear()
        for shared in self._shared.values():
            shared.stop.set()
        self._shared.clear()
        self._errlog.close()

    async def _start(self, server: ServerDef, key: str, attached: list[str]) -> LiveServer:
        self._count += 1
        sandbox = self.root / f"{server.name}-{self._count}" if server.sandbox else None
        process: SharedProcess | None = None
        # A cassette declared `transport: http` is served over HTTP even with one session.
        over_http = self.share or (server.replay is not None and server.transport == "http")
        if over_http and server.shared is not None:
            process = await self._process(server, attached)
            _, how = shared_launch(server, sandbox, attached, self.environ, process.port, self.root)
        else:
            how = launch(server, sandbox, attached, self.environ)
        if sandbox is not None:
            await anyio.to_thread.run_sync(reset_sandbox, server, sandbox)
        noise = StdoutNoise(server.name)
        try:
            live: LiveServer = await self._tg.start(
                self._keep, server, key, sandbox, how, process, noise
            )
        except Exception as exc:  # any start failure is the infrastructure's, not the model's
            if sandbox is not None:
                shutil.rmtree(sandbox, ignore_errors=True)
            # The failure may quote the command or URL: values from the environment are masked.
            stray = f"; {how.masked(noise.said())}" if noise.lines else ""
            raise InfraError(
                f"MCP server {server.name!r} failed to start: {how.masked(start_failure(exc))} "
                f"(its stderr is in {self.log_path}){stray}"
            ) from None
        if process is None:
            self.started += 1
        else:
            self.sessions_opened += 1
        return live

    async def _process(self, server: ServerDef, attached: list[str]) -> SharedProcess:
        """The running shared process of `server`, started if there is none (or it died)."""
        key = _key(server, [])
        async with self._starting:  # trials arriving together start it once
            running = self._shared.get(key)
            if running is not None and running.alive:
                return running
            port = free_port()
            how, _ = shared_launch(server, None, attached, self.environ, port, self.root)
            try:
                shared: SharedProcess = await self._tg.start(
                    keep_process,
                    server.name,
                    how.argv,
                    how.env,
                    port,
                    self._errlog,
                    self.start_timeout_s,
                    self.fork,
                )
            except Exception as exc:  # as for any server: the infrastructure's failure
                raise InfraError(
                    f"shared MCP server {server.name!r} failed to start: "
                    f"{how.masked(start_failure(exc))} (its output is in {self.log_path})"
                ) from None
            self._shared[key] = shared
            self.started += 1
            return shared

    async def _keep(
        self,
        server: ServerDef,
        key: str,
        sandbox: Path | None,
        how: Launch,
        process: SharedProcess | None,
        noise: StdoutNoise,
        *,
        task_status: TaskStatus[LiveServer],
    ) -> None:
        """Own one server (or one session on a shared process) from start to stop, so its
        contexts open and close in one task."""
        started = False
        if process is not None:
            process.sessions += 1
        changes = ListChanges()
        elicit = ElicitHolder(server.name)
        try:
            spawned = Spawned(process.process.pid if process is not None else None)
            opened = open_session(how, self._errlog, noise, changes, elicit, spawned, self.fork)
            async with opened as session:
                # Bounded by the server's CPU time, not the wall clock (workers/startclock.py).
                async with start_deadline(
                    lambda: spawned.pid, self.start_timeout_s, cpu=spawned.cpu
                ):
                    instructions = await handshake(session, server)
                    listed = await session.list_tools()
                async with follow_changes(session, changes, self.start_timeout_s):
                    live = LiveServer(
                        key,
                        server,
                        session,
                        list(listed.tools),
                        sandbox,
                        process=process,
                        instructions=instructions,
                        noise=noise,
                        changes=changes,
                        elicit=elicit,
                        started=how_started(how, process, spawned),
                    )
                    task_status.started(live)
                    started = True
                    await live.stop.wait()
        except Exception as exc:
            if not started:
                raise
            # A server that died while lent: its trial sees the failure; the pool carries on.
            # No traceback where it could quote a value taken from the environment.
            logger.warning(
                "MCP server %s stopped with an error: %s",
                server.name,
                how.masked(start_failure(exc)),
                exc_info=not how.secrets,
            )
        finally:
            if process is not None:
                process.sessions -= 1
            if started and sandbox is not None:
                shutil.rmtree(sandbox, ignore_errors=True)
