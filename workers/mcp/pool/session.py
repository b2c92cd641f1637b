"""Opening one MCP session with a server: over stdio or streamable HTTP, in the server's protocol, its stray stdout counted."""

from __future__ import annotations

import logging
import ssl
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import TextIO

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.session import MessageHandlerFnT as MessageHandler
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import ValidationError

from mcp_farm.schema import ServerDef, ServerStart
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.elicit import ElicitHolder
from mcp_farm.workers.mcp.launch import relay_cpu, relayed, started_as
from mcp_farm.workers.mcp.pool.changes import ListChanges
from mcp_farm.workers.mcp.pool.placeholders import Launch
from mcp_farm.workers.mcp.shared import SharedProcess
from mcp_farm.workers.startclock import (
    children_of_self,
    spawned_child,
    tree_cpu,
)

logger = logging.getLogger(__name__)

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


def _handler(noise: StdoutNoise | None, changes: ListChanges) -> MessageHandler:
    """The session's message handler: stray stdout lines counted, tool-list changes noted."""

    async def handle(message: object) -> None:
        if noise is not None:
            await noise(message)
        await changes(message)

    return handle


def how_started(how: Launch, process: SharedProcess | None, spawned: Spawned) -> ServerStart:
    """How the process behind a new session started: a shared process's own way, `url` for
    an address the farm did not start, else whether the relay got a forked server."""
    if process is not None:
        return process.started
    if how.url is not None:
        return "url"
    return started_as(spawned.pid, spawned.relayed)


async def handshake(session: ClientSession, server: ServerDef) -> str:
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
async def open_session(
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
