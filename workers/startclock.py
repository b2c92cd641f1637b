"""The limit on a server's start-up, in the CPU time of the server's own processes, as a local
model's reply is limited by its thread's CPU time (workers/model/guard.py): a machine busy
with other work stretches a start-up in wall time only, so under load a server is not taken
for one that failed to start. A start-up that gets no CPU time at all for `stall_s` wall
seconds is hung. Where the server's process cannot be seen (a remote URL, a platform without
/proc), the limit is wall time, as before."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

POLL_S = 0.25
"""How often the process tree's CPU time is read."""

MIN_STALL_S = 30.0
"""The least wall time a start-up may go without any CPU time before it counts as hung (the
local model's hang guard uses the same)."""

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PROC = Path("/proc")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in (_PROC / str(pid) / "task").glob("*/children"):
        try:
            found += [int(c) for c in task.read_text().split()]
        except (OSError, ValueError):
            continue
    return found


def _own_cpu(pid: int) -> float:
    """A process's user and system CPU seconds, and those of its children it has waited for."""
    stat = (_PROC / str(pid) / "stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return sum(int(f) for f in fields[11:15]) / _TICK


def tree_cpu(pid: int) -> float:
    """CPU seconds the process and its live descendants have used (a server started through
    `npx` or `uv run` does its work in a child); OSError when the process is gone."""
    total, todo, seen = 0.0, [pid], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            total += _own_cpu(current)
        except (OSError, ValueError, IndexError):
            if current == pid:
                raise OSError(f"process {pid} is gone") from None
            continue
        todo += _children(current)
    return total


def children_of_self() -> set[int]:
    """This process's direct children (empty where /proc cannot be read)."""
    return set(_children(os.getpid()))


@asynccontextmanager
async def start_deadline(
    pid: Callable[[], int | None],
    limit_s: float,
    stall_s: float | None = None,
    cpu: Callable[[int], float] = tree_cpu,
) -> AsyncIterator[None]:
    """Bound the block (a server's start-up) by `limit_s` seconds of the CPU time of the
    process `pid()` names and its descendants, and by `stall_s` wall seconds without any
    (at least MIN_STALL_S, and at least `limit_s`); TimeoutError past either, as
    `anyio.fail_after`. With no process to read, `limit_s` is wall time."""
    stall = max(stall_s or 0.0, MIN_STALL_S, limit_s)
    verdict: list[str] = []

    async def watch(scope: anyio.CancelScope) -> None:
        first: float | None = None
        began = time.monotonic()
        last, grown = 0.0, began
        while True:
            await anyio.sleep(POLL_S)
            found = pid()
            if found is None:
                # No process of its own to read (a server at a URL): wall time, as before.
                if time.monotonic() - began >= limit_s:
                    verdict.append(f"did not answer within {limit_s:g} s")
                    scope.cancel()
                    return
                continue
            try:
                used = cpu(found)
            except OSError:
                return  # it exited: the start-up fails on its own, with the server's words
            first = used if first is None else first
            if used - first >= limit_s:
                verdict.append(f"used {limit_s:g} s of CPU time")
            elif used > last:
                last, grown = used, time.monotonic()
            elif time.monotonic() - grown >= stall:
                verdict.append(f"got no CPU time for {stall:g} s")
            if verdict:
                scope.cancel()
                return

    if not _PROC.joinpath(str(os.getpid()), "stat").exists():
        with anyio.fail_after(limit_s):
            yield
        return
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch, scope)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
    if scope.cancelled_caught and verdict:
        raise TimeoutError(f"the server did not start: it {verdict[0]}")


def spawned_child(new: set[int], argv: list[str]) -> int | None:
    """The one new child that runs `argv` (or the only new child); None when it cannot be
    told (the start-up limit then falls back to wall time)."""
    if len(new) == 1:
        return next(iter(new))
    matching = [pid for pid in new if _cmdline(pid) == argv]
    return matching[0] if len(matching) == 1 else None


def _cmdline(pid: int) -> list[str]:
    try:
        raw = (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]
