"""MCP servers kept running between trials, with their state reset per trial.

Starting a stdio server costs about half a second; a call on a live session about a
millisecond. So each worker process keeps the servers it has started, lends one to a trial at
a time, and before lending it again resets its sandbox folder in place (the server reads the
folder on every call). A server that failed, hung or belongs to a trial that ended badly is
stopped, not lent again; a server declared `reuse: false` is started fresh for every trial, and
one declared `reset: session` gets a new MCP session for every trial (over HTTP a new connection
and session to the same server; over stdio, where the process is the session, a new process).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import ssl
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TextIO

import anyio
import httpx2
from anyio.abc import TaskGroup, TaskStatus
from mcp import ClientSession, MCPError
from mcp.client.session import MessageHandlerFnT as MessageHandler
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import Subscription, SubscriptionLost, ToolsListChanged, listen
from mcp.types import Tool, ToolListChangedNotification
from pydantic import ValidationError

from mcp_farm.scenarios import (
    FIXTURES_DIR,
    sandbox_source,
)
from mcp_farm.scenarios.cassette import replay_definition
from mcp_farm.schema import (
    ENV_PLACEHOLDER,
    ServerDef,
    ServerStart,
    absolute_folder,
    fill_placeholders,
    remember_secret,
)
from mcp_farm.schema.redact import MASK, MASK_MIN_CHARS
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.elicit import ElicitHolder
from mcp_farm.workers.mcp.launch import relay_cpu, relayed, started_as
from mcp_farm.workers.mcp.shared import (
    SharedProcess,
    free_port,
    keep_process,
)
from mcp_farm.workers.startclock import (
    children_of_self,
    spawned_child,
    start_deadline,
    tree_cpu,
)

logger = logging.getLogger(__name__)

MAX_IDLE = 16
"""Idle servers kept per process and trial slot (`Settings.sessions`); the least recently
used beyond that are stopped."""

REPO_ROOT = FIXTURES_DIR.parents[1]
"""Where `{root}` points: the folder that holds the `scenarios` package (a checkout's root),
so a command can name a project-local install such as `.tools/` whatever the working folder."""


PARSE_FAILURE = "Failed to parse JSONRPC message from server"
"""What the SDK's stdio client logs, with a traceback, for each stdout line that is not an MCP
message; the pool counts those lines per server instead (StdoutNoise)."""


class _NoParseTracebacks(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != PARSE_FAILURE


logging.getLogger("mcp.client.stdio").addFilter(_NoParseTracebacks())

SHOWN_NOISE = 120
"""Characters of a server's first stray stdout line quoted in a message."""


@dataclass
class StdoutNoise:
    """Lines a stdio server wrote to stdout that are not MCP messages (a banner, a log line):
    the client skips them; they are counted here and named in one line, not a traceback each."""

    server: str
    lines: int = 0
    first: str = ""

    async def __call__(self, message: object) -> None:
        """The session's message handler: transport errors are what the client could not
        parse; notifications need nothing here."""
        if isinstance(message, ValidationError):
            if not self.lines:
                errors = message.errors()
                self.first = str(errors[0].get("input", "")) if errors else ""
                logger.info("MCP server %s wrote a non-MCP line to stdout", self.server)
            self.lines += 1
        await anyio.lowlevel.checkpoint()

    def said(self) -> str:
        """The lines in words, or "" when there were none."""
        if not self.lines:
            return ""
        first = self.first if len(self.first) <= SHOWN_NOISE else self.first[:SHOWN_NOISE] + "…"
        return (
            f"it wrote {self.lines} line(s) to stdout that are not MCP messages (the first: "
            f"{first!r}); a stdio server must write only MCP messages there and log to stderr"
        )


@dataclass
class ListChanges:
    """Counts a server's `notifications/tools/list_changed`: a trial lists the tools again
    when the count moves (workers/mcp/relist.py)."""

    seen: int = 0
    arrived: anyio.Event = field(default_factory=anyio.Event)
    """Set by the first notification since `expect()`."""

    def expect(self) -> None:
        """Wait for a change from now on (before the farm makes a call that causes one)."""
        self.arrived = anyio.Event()

    def note(self) -> None:
        """One change announced (a notification, or an event on a listen stream)."""
        self.seen += 1
        self.arrived.set()

    async def __call__(self, message: object) -> None:
        if isinstance(message, ToolListChangedNotification):
            self.note()
        await anyio.lowlevel.checkpoint()


def _handler(noise: StdoutNoise | None, changes: ListChanges) -> MessageHandler:
    """The session's message handler: stray stdout lines counted, tool-list changes noted."""

    async def handle(message: object) -> None:
        if noise is not None:
            await noise(message)
        await changes(message)

    return handle


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


def _expand(
    arg: str,
    sandbox: Path | None,
    attached: list[str],
    port: int | None = None,
    sandboxes: Path | None = None,
) -> str:
    # Every path a server is handed is absolute: a server resolves a relative one against its
    # own working or install folder (npm's server-memory writes under node_modules/ then).
    values = {
        "python": sys.executable,
        "root": str(REPO_ROOT),
        "sandbox": str(absolute_folder(sandbox)) if sandbox else "",
        "attached": ",".join(attached),
    }
    # Left as written when not given: `_key` builds keys from the definition as written.
    if port is not None:
        values["port"] = str(port)
    if sandboxes is not None:
        values["sandboxes"] = str(absolute_folder(sandboxes))
    return fill_placeholders(arg, values)


@dataclass(frozen=True)
class Launch:
    """How to start one server, every placeholder filled in. It may hold values from the
    worker's environment (`{env:VAR}`), so it is never stored, logged or used as a key."""

    argv: list[str]
    env: dict[str, str]
    url: str | None
    secrets: tuple[str, ...] = ()
    """The values taken from the environment, masked in any message about this server."""
    headers: dict[str, str] = field(default_factory=dict)
    """HTTP headers of the session (a session on a shared process names its sandbox here)."""

    def masked(self, text: str) -> str:
        for value in self.secrets:
            if len(value) >= MASK_MIN_CHARS:
                text = text.replace(value, MASK)
        return text


class _Filler:
    """Fills one server's placeholders, remembering the values taken from the environment."""

    def __init__(self, server: ServerDef, environ: Mapping[str, str]) -> None:
        self.server, self.environ = server, environ
        self.taken: list[str] = []

    def __call__(
        self,
        text: str,
        sandbox: Path | None,
        attached: list[str],
        port: int | None = None,
        sandboxes: Path | None = None,
    ) -> str:
        return ENV_PLACEHOLDER.sub(self._value, _expand(text, sandbox, attached, port, sandboxes))

    def _value(self, match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in self.environ:
            raise InfraError(
                f"MCP server {self.server.name!r} needs the environment variable {name} "
                f"(`{{env:{name}}}` in its definition), which is not set on this worker"
            )
        self.taken.append(self.environ[name])
        remember_secret(self.environ[name])
        return self.environ[name]


def launch(
    server: ServerDef, sandbox: Path | None, attached: list[str], environ: Mapping[str, str]
) -> Launch:
    """The server's command, environment and URL with placeholders filled in; InfraError
    naming the server and the variable when `{env:VAR}` names one the worker does not have."""
    fill = _Filler(server, environ)
    argv = [fill(a, sandbox, attached) for a in server.command or []]
    env = {k: fill(v, sandbox, attached) for k, v in server.env.items()}
    url = fill(server.url, sandbox, attached) if server.url else None
    return Launch(argv, env, url, tuple(fill.taken))


def shared_launch(
    server: ServerDef,
    sandbox: Path | None,
    attached: list[str],
    environ: Mapping[str, str],
    port: int,
    sandboxes: Path,
) -> tuple[Launch, Launch]:
    """For a server with a `shared:` launch: how to start its process on `port` (`{sandboxes}`:
    the folder every trial's sandbox lies in), and how one trial's session reaches it (its URL
    and headers, `{sandbox}` and `{attached}` filled in)."""
    assert server.shared is not None
    fill = _Filler(server, environ)
    argv = [fill(a, None, attached, port, sandboxes) for a in server.shared.command]
    env = {k: fill(v, None, attached, port) for k, v in server.env.items()}
    url = fill(server.shared.url, None, attached, port)
    headers = {k: fill(v, sandbox, attached, port) for k, v in server.shared.headers.items()}
    secrets = tuple(fill.taken)
    return Launch(argv, env, None, secrets), Launch([], {}, url, secrets, headers)


def _key(server: ServerDef, attached: list[str]) -> str:
    # Built from the definition as written: `{env:VAR}` stays a placeholder, so no value
    # from the environment is ever part of a key. The sandbox's source is part of it: two
    # suites may define a server of one name and command on different folders, and a server
    # lent clean keeps the folder it was last given.
    command = [_expand(a, None, attached) for a in server.command or []]
    source = sandbox_source(server)
    return json.dumps(
        [server.name, command, server.url, server.env, server.protocol, str(source or "")],
        sort_keys=True,
    )


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
            opened = _open(how, self._errlog, noise, changes, elicit, spawned, self.fork)
            async with opened as session:
                # Bounded by the server's CPU time, not the wall clock (workers/startclock.py).
                async with start_deadline(
                    lambda: spawned.pid, self.start_timeout_s, cpu=spawned.cpu
                ):
                    instructions = await _opened(session, server)
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
                        started=_started(how, process, spawned),
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


def _started(how: Launch, process: SharedProcess | None, spawned: Spawned) -> ServerStart:
    """How the process behind a new session started: a shared process's own way, `url` for
    an address the farm did not start, else whether the relay got a forked server."""
    if process is not None:
        return process.started
    if how.url is not None:
        return "url"
    return started_as(spawned.pid, spawned.relayed)


async def _opened(session: ClientSession, server: ServerDef) -> str:
    """Open the session in the server's `protocol` and return what the server says about
    itself (its `instructions`): by the `initialize` handshake, or at 2026-07-28 by
    `server/discover`, after which every request carries the version and no handshake runs."""
    if server.protocol == "legacy":
        opened = await session.initialize()
        return (getattr(opened, "instructions", None) or "").strip()
    found = await session.discover()
    if session.protocol_version != server.protocol:
        raise InfraError(
            f"it speaks {session.protocol_version}, not {server.protocol} (its `protocol`)"
        )
    return (found.instructions or "").strip()


@asynccontextmanager
async def follow_changes(
    session: ClientSession, changes: ListChanges, limit_s: float
) -> AsyncIterator[None]:
    """At 2026-07-28, hear the server's tool-list changes: a server announces them only on a
    `subscriptions/listen` stream its client opens, so one is open for the session's life and
    each `ToolsListChanged` event counts as a handshake-era notification does. A handshake-era
    session, or a server that declares no tool-list changes, needs none. The server has
    `limit_s` wall seconds to acknowledge the stream (it answers at once when it serves it)."""
    found = session.discover_result
    tools = found.capabilities.tools if found is not None else None
    if tools is None or not tools.list_changed:
        yield
        return
    opened = False
    # The deadline bounds the acknowledgement only: lifted once the stream is open.
    with anyio.CancelScope(deadline=anyio.current_time() + limit_s) as acked:
        try:
            async with listen(session, tools_list_changed=True) as subscription:
                opened = True
                acked.deadline = math.inf
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_hear, subscription, changes)
                    try:
                        yield
                    finally:
                        tg.cancel_scope.cancel()
        except MCPError as exc:
            if opened:
                raise
            raise InfraError(
                f"it refused subscriptions/listen for its tool-list changes: {exc}"
            ) from None
    if acked.cancelled_caught and not opened:
        raise InfraError(f"it did not acknowledge subscriptions/listen within {limit_s:g} s")


async def _hear(subscription: Subscription, changes: ListChanges) -> None:
    """Count each tool-list event of a listen stream until the stream ends."""
    try:
        async for event in subscription:
            if isinstance(event, ToolsListChanged):
                changes.note()
    except SubscriptionLost:
        # The server dropped the stream (or the session is going away): a trigger that waits
        # for a change then finds none and says so, naming the server and the call.
        logger.info("a server's subscriptions/listen stream ended without its close")


HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
"""The SDK's own defaults: a session's response stream may stay open for minutes."""


@lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    """One TLS context for every session of the process: building one per client reads the
    CA bundle each time, which costs milliseconds of CPU per session opened."""
    return httpx2.create_ssl_context()


@dataclass
class Spawned:
    """The process a session's server runs in, where this process can see it."""

    pid: int | None = None
    relayed: bool = False
    """The process is a relay for a forked server (workers/mcp/launch/)."""

    def cpu(self, pid: int) -> float:
        return relay_cpu(pid) if self.relayed else tree_cpu(pid)


@asynccontextmanager
async def _open(
    how: Launch,
    errlog: TextIO,
    noise: StdoutNoise | None = None,
    changes: ListChanges | None = None,
    elicit: ElicitHolder | None = None,
    spawned: Spawned | None = None,
    fork: bool = False,
) -> AsyncIterator[ClientSession]:
    """A session with one server: over stdio when it is a command, else streamable HTTP. With
    `elicit`, the session declares the elicitation capability and answers through it; with
    `spawned`, the process id of a stdio server is kept there (for its start-up limit); with
    `fork`, a Python server starts as a fork of a warm interpreter where it can
    (workers/mcp/launch/)."""
    changes = changes or ListChanges()
    if how.url is None:
        argv = (fork and relayed(how.argv, how.env)) or how.argv
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(how.env) or None)
        async with AsyncExitStack() as stack:
            # The SDK does not tell the process id: it is the child this process gained while
            # spawning, told from another spawned at the same moment by its command line.
            before = children_of_self()
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            if spawned is not None:
                spawned.pid = spawned_child(children_of_self() - before, argv)
                spawned.relayed = argv is not how.argv
            session = await stack.enter_async_context(
                ClientSession(
                    read,
                    write,
                    elicitation_callback=elicit,
                    message_handler=_handler(noise, changes),
                )
            )
            yield session
    else:
        async with (
            httpx2.AsyncClient(headers=how.headers, timeout=HTTP_TIMEOUT, verify=_tls()) as http,
            streamable_http_client(how.url, http_client=http) as (read, write),
            ClientSession(
                read, write, elicitation_callback=elicit, message_handler=_handler(None, changes)
            ) as session,
        ):
            yield session
