"""The scenario's clock (`time_limit_s`), and holding it while something that is not the
session's own work runs: the model's replies, the user model's, a server's start-up."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import anyio


@contextmanager
def clock_stopped(clock: anyio.CancelScope | None) -> Iterator[None]:
    """Hold the scenario's clock for the block: a slow machine is not a hung tool, and a
    server starting is the farm's work, bounded by its own start-up limit."""
    if clock is None:
        yield
        return
    left = clock.deadline - anyio.current_time()
    clock.deadline = math.inf
    try:
        yield
    finally:
        clock.deadline = anyio.current_time() + left
