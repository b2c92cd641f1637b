"""One server process serving many trials at once, each over its own MCP session.

A worker process that runs many sessions (`--pool threads --concurrency N`) would otherwise start
a server process per session in flight — about 100 MB each for a Python server. A server that
declares a `shared:` launch is started once per worker process on a loopback port instead; each
trial opens its own streamable-HTTP session on it, and names its own sandbox in a header, so
the state of two trials never meets. The process is watched: when it exits, the sessions on it
fail (their trials are infrastructure errors) and the next trial starts a new one.
"""

from __future__ import annotations

import logging
import socket
import subprocess
from dataclasses import dataclass, field
from typing import TextIO

import anyio
from anyio.abc import Process, TaskStatus
from mcp.client.stdio import get_default_environment

from mcp_farm.schema import ServerStart
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.launch import relay_cpu, relayed, started_as
from mcp_farm.workers.startclock import start_deadline, tree_cpu

logger = logging.getLogger(__name__)

POLL_S = 0.02
STOP_WAIT_S = 5.0
"""How long a stopping process waits for its sessions to close, then for itself to exit."""


def free_port() -> int:
    """A loopback port nothing listens on now. Another process could take it before the
    server binds it; the server then fails to start, and the trial says so."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(eq=False)
class SharedProcess:
    """A running shared server: its port, and how many sessions are open on it."""

    name: str
    port: int
    process: Process
    sessions: int = 0
    stop: anyio.Event = field(default_factory=anyio.Event)
    started: ServerStart = "fresh"
    """Whether the process was forked from the warm interpreter or started fresh."""

    @property
    def alive(self) -> bool:
        return self.process.returncode is None and not self.stop.is_set()


async def _serving(shared: SharedProcess) -> None:
    """Return once the port accepts connections; fail if the process exits first."""
    while True:
        if shared.process.returncode is not None:
            raise InfraError(f"the process exited with status {shared.process.returncode}")
        try:
            stream = await anyio.connect_tcp("127.0.0.1", shared.port)
        except OSError:
            await anyio.sleep(POLL_S)
            continue
        await stream.aclose()
        return


async def keep_process(
    name: str,
    argv: list[str],
    env: dict[str, str],
    port: int,
    errlog: TextIO,
    start_timeout_s: float,
    fork: bool = False,
    *,
    task_status: TaskStatus[SharedProcess],
) -> None:
    """Start the process (with `fork`, as a fork of the warm interpreter where it can:
    workers/mcp/launch/), report it once it serves, and own it until `stop` or its exit."""
    relay = relayed(argv, env) if fork else None
    # stdin stays an open pipe that nothing is written to: when this worker dies, the pipe
    # closes and a server started with `--shared` exits too, instead of serving nobody forever.
    process = await anyio.open_process(
        relay or argv,
        env=get_default_environment() | env,
        stdin=subprocess.PIPE,
        stdout=errlog,
        stderr=errlog,
    )
    shared = SharedProcess(name, port, process)
    try:
        # Bounded by the server's CPU time, not the wall clock (workers/startclock.py).
        cpu = relay_cpu if relay else tree_cpu
        async with start_deadline(lambda: process.pid, start_timeout_s, cpu=cpu):
            await _serving(shared)
        shared.started = started_as(process.pid, relay is not None)
        task_status.started(shared)
        async with anyio.create_task_group() as tg:

            async def exited() -> None:
                await process.wait()
                if not shared.stop.is_set():
                    logger.warning("shared MCP server %s exited (%s)", name, process.returncode)
                tg.cancel_scope.cancel()

            tg.start_soon(exited)
            await shared.stop.wait()
            # Let the sessions on it say goodbye (each sends a DELETE) before it goes.
            with anyio.move_on_after(STOP_WAIT_S):
                while shared.sessions:
                    await anyio.sleep(POLL_S)
            tg.cancel_scope.cancel()
    finally:
        shared.stop.set()
        with anyio.CancelScope(shield=True):
            await _end(process)


async def _end(process: Process) -> None:
    if process.returncode is not None:
        return
    process.terminate()
    with anyio.move_on_after(STOP_WAIT_S):
        await process.wait()
        return
    process.kill()
    await process.wait()
