"""Errors raised while running a trial."""

from __future__ import annotations

from mcp_farm.schema import FarmError


class WorkerError(FarmError):
    """Base of the worker's errors."""


class InfraError(WorkerError):
    """Not the model's fault: an endpoint is down, a server failed to start, the store is away.

    Trials that end this way are recorded as `infra_error` and never counted as model failures.
    """


class AdapterError(WorkerError):
    """A model target names an adapter or model that this worker cannot serve."""
