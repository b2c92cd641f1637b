"""Errors raised while running a trial, and how a bug in the farm is written down."""

from __future__ import annotations

import traceback

from mcp_farm.schema import FarmError


class WorkerError(FarmError):
    """Base of the worker's errors."""


class InfraError(WorkerError):
    """Not the model's fault: an endpoint is down, a server failed to start, the store is away.

    Trials that end this way are recorded as `infra_error` and never counted as model failures.
    """


class AdapterError(WorkerError):
    """A model target names an adapter or model that this worker cannot serve."""


TRACEBACK_LINES = 40
"""The last lines of a harness bug's traceback kept in the trial's detail (the frames nearest
the error; the whole traceback is in the worker's log)."""


def harness_detail(exc: BaseException) -> str:
    """A trial's detail for a bug in the farm: what was raised, then its traceback."""
    lines = "".join(traceback.format_exception(exc)).rstrip().splitlines()
    return f"bug in the farm: {type(exc).__name__}: {exc}\n" + "\n".join(lines[-TRACEBACK_LINES:])
