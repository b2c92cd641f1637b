"""One long-lived event loop per worker process, owning the warm MCP server pool.

Task functions are synchronous (Celery calls them that way); they hand each trial to this loop,
which runs in a background thread, so servers started for one trial are still alive for the next.
"""

from __future__ import annotations

import atexit
import os
import shutil
import threading
from concurrent.futures import Future
from typing import Any

import anyio
from anyio.abc import TaskStatus
from anyio.from_thread import BlockingPortal, start_blocking_portal

from mcp_farm.schema import (
    Settings,
    TrialResult,
    TrialSpec,
)
from mcp_farm.workers.mcp.pool import ServerPool
from mcp_farm.workers.trial import execute_trial

CLOSE_TIMEOUT_S = 15.0


class Runtime:
    """A background event loop and the server pool that lives in it."""

    def __init__(self, settings: Settings) -> None:
        self.pid = os.getpid()
        self.key = _key(settings)
        self.root = settings.data_dir / "servers" / f"{os.uname().nodename}-{self.pid}"
        self._closing: anyio.Event | None = None  # made inside the loop, by _own_pool
        self._portal_cm = start_blocking_portal()
        self.portal: BlockingPortal = self._portal_cm.__enter__()
        self._owner: Future[Any]
        self._owner, self.pool = self.portal.start_task(
            self._own_pool, settings.server_start_timeout_s, settings.sessions, settings.server_fork
        )

    async def _own_pool(
        self,
        start_timeout_s: float,
        sessions: int,
        fork: bool,
        *,
        task_status: TaskStatus[ServerPool],
    ) -> None:
        self._closing = anyio.Event()
        async with anyio.create_task_group() as tg:
            pool = ServerPool(tg, self.root, start_timeout_s, sessions, fork=fork)
            task_status.started(pool)
            await self._closing.wait()
            pool.close()

    def run(self, spec: TrialSpec, settings: Settings) -> TrialResult:
        """Run one trial on the warm pool and wait for its result."""
        return self.portal.call(execute_trial, spec, settings, self.pool)

    def close(self) -> None:
        """Stop every server and the loop; safe to call twice."""
        if self._closing is None or self._closing.is_set():
            return
        self.portal.call(self._closing.set)
        self._owner.result(timeout=CLOSE_TIMEOUT_S)
        self._portal_cm.__exit__(None, None, None)
        shutil.rmtree(self.root, ignore_errors=True)


def _key(settings: Settings) -> tuple[str, float, int, bool]:
    return (
        str(settings.data_dir.resolve()),
        settings.server_start_timeout_s,
        settings.sessions,
        settings.server_fork,
    )


_runtime: Runtime | None = None
_lock = threading.Lock()


def get_runtime(settings: Settings) -> Runtime:
    """This process's runtime, started on first use (after a fork, a new one for the child)."""
    global _runtime
    with _lock:
        if _runtime is not None and _runtime.pid == os.getpid() and _runtime.key != _key(settings):
            _runtime.close()  # another data folder (tests): start over there
            _runtime = None
        if _runtime is None or _runtime.pid != os.getpid():
            _runtime = Runtime(settings)
        return _runtime


def close_runtime() -> None:
    global _runtime
    with _lock:
        if _runtime is not None and _runtime.pid == os.getpid():
            _runtime.close()
        _runtime = None


atexit.register(close_runtime)
