"""The limit on one reply of a model that runs in the worker's own process: the CPU time of the
thread that generates it, and a hang guard for a thread that gets no CPU time at all, so that a
busy machine is never taken for a slow or hung model.

A model behind an endpoint is bounded by the wall clock (the session's `move_on_after`): the
farm cannot see its machine. A model in this process can be seen: its reply is bounded by tokens
(`max_tokens`, the context), and `request_timeout_s` × `time_scale` bounds the CPU time its
generating thread spends, which a machine shared with other work stretches in wall time only.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import anyio

from mcp_farm.workers.errors import WorkerError

T = TypeVar("T")

POLL_S = 0.25
"""How often the watcher reads the generating thread's CPU clock (the thread itself also checks
its limit at every token)."""

MIN_STALL_S = 30.0
"""The least wall time a reply may go without any CPU time before it counts as hung: even a
machine busy many times over gives every runnable thread some time within seconds."""


class ReplyStopped(WorkerError):
    """Raised in the generating thread, at its next token, once the reply is past its limit."""


def _thread_clock() -> Callable[[], float] | None:
    """A reader of the calling thread's CPU time that another thread may call; None where the
    platform has none (the watcher then sees the time the thread last reported at a token)."""
    try:
        clock = time.pthread_getcpuclockid(threading.get_ident())
    except (AttributeError, OSError):
        return None
    return lambda: time.clock_gettime(clock)


@dataclass
class ReplyGuard:
    """One reply's limit: `limit_s` seconds of its thread's CPU time, and `stall_s` wall seconds
    with none. Its clock starts when the thread begins generating (`begin`), so waiting for the
    model, which other trials of this process share, is not counted."""

    limit_s: float
    stall_s: float
    wall: Callable[[], float] = time.monotonic
    cpu: Callable[[], float] | None = None
    """The CPU clock to read instead of the generating thread's (for tests)."""
    stop: threading.Event = field(default_factory=threading.Event)
    """Set once the reply is past its limit: the thread stops at its next token."""
    reason: str = ""
    """Which limit the reply went past, in words; empty while within both."""
    _start: float | None = None
    _seen: float = 0.0
    _reader: Callable[[], float] | None = None
    _progress: tuple[float, float] = (0.0, 0.0)
    """CPU seconds used, and the wall time when that much had last grown."""

    def begin(self) -> None:
        """In the generating thread, once it holds the model: start the clocks."""
        self._reader = self.cpu or _thread_clock()
        self._start = self._seen = (self.cpu or time.thread_time)()
        self._progress = (0.0, self.wall())

    def check(self) -> None:
        """In the generating thread, at each token: ReplyStopped past the CPU limit, or once
        the watcher has stopped the reply."""
        self._seen = (self.cpu or time.thread_time)()
        if self.stop.is_set() or self._over_cpu():
            self.stop.set()
            raise ReplyStopped(self.reason)

    def used_s(self) -> float | None:
        """CPU seconds the reply has used so far; None before it began."""
        if self._start is None:
            return None
        now = self._seen
        if self._reader is not None:
            # A thread that is gone has no clock: what it last reported stands.
            with contextlib.suppress(OSError):
                now = max(now, self._reader())
        return now - self._start

    def _over_cpu(self) -> bool:
        used = self.used_s()
        if used is None or used <= self.limit_s:
            return False
        self.reason = f"the model's reply used more than {self.limit_s:g} s of CPU time"
        return True

    def _stalled(self) -> bool:
        used, since = self.used_s(), self._progress[1]
        if used is None:
            return False
        if used > self._progress[0]:
            self._progress = (used, self.wall())
            return False
        if self.wall() - since <= self.stall_s:
            return False
        self.reason = f"the model's reply got no CPU time for {self.stall_s:g} s (hung)"
        return True

    def past_limit(self) -> bool:
        """Whether the reply is past either limit (`reason` then says which)."""
        return self._over_cpu() or self._stalled()

    async def watch(self) -> None:
        """Return once the reply is past a limit, having told its thread to stop; this also
        catches a thread that never comes back from llama.cpp to check at a token."""
        while not self.past_limit():
            await anyio.sleep(POLL_S)
        self.stop.set()


async def guarded(run: Callable[[ReplyGuard], T], guard: ReplyGuard) -> T | None:
    """`run(guard)` in a worker thread, bounded by `guard`; None when it was stopped, with the
    reason in `guard.reason`. A thread the watcher gave up on is told to stop, and left."""
    done: list[T] = []
    try:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                await guard.watch()
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            with contextlib.suppress(ReplyStopped):  # stopped at a token: past its CPU limit
                done.append(await anyio.to_thread.run_sync(run, guard, abandon_on_cancel=True))
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # Only the generation raises here: hand its exception on as it was raised.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    finally:
        guard.stop.set()  # a cancelled reply must not go on generating for nobody
    return done[0] if done else None
