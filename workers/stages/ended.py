"""The hand-off from the session's stages to grading: what the session recorded and how it
ended, with a failure that ended it classified (a timeout, the infrastructure's, a bug)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mcp_farm.schema import FarmError, StopReason
from mcp_farm.workers.errors import InfraError, harness_detail
from mcp_farm.workers.session import SessionState
from mcp_farm.workers.stages.drivers import Driver

# The trial's log, wherever its stages are written.
logger = logging.getLogger("mcp_farm.workers.trial")


@dataclass(frozen=True)
class Ended:
    """A trial's session as it ended: what grading, attribution and the record read."""

    trial_id: str
    """The trial's id, which the log lines of the later stages name."""
    state: SessionState
    """Everything the session recorded, up to where it ended."""
    schemas: dict[str, dict[str, Any]]
    """Each tool's input schema, of every list the session saw (calls are graded by them)."""
    stop: StopReason
    """What ended the session (`turn_limit` when nothing else did)."""
    problem: str
    """What failed, in words, when the infrastructure or the farm's own code ended it."""
    driver: Driver
    """Who wrote the user's side: it grades the calls and attributes the failure."""
    pins: dict[str, str]
    """The model client's pins (empty when no client could be made), for the provenance."""
    started_at: datetime
    latency_s: float
    """The trial's seconds, less the simulated user's and tool selection's."""
    selection_s: float | None
    """Tool selection's seconds; None without selection."""


def _find(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first exception of `kind` in `exc`, looking inside exception groups."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _find(inner, kind)
            if found:
                return found
    return None


def classified(exc: BaseException, trial_id: str) -> tuple[StopReason, str] | None:
    """How a failure ended the session, and what it was in words: a timeout, an infrastructure
    error (InfraError, or a FarmError: a model this worker cannot serve), or a bug in the farm
    (any other Exception, with its traceback). None for the rest (a cancellation), which the
    caller raises again."""
    if _find(exc, TimeoutError) and not _find(exc, InfraError):
        return "time_limit", ""
    if (infra := _find(exc, InfraError)) is not None:
        return "infra_error", str(infra)
    if _find(exc, FarmError) is not None:  # deliberate: a model this worker cannot serve
        logger.exception("trial %s failed", trial_id[:12])
        return "infra_error", f"{type(exc).__name__}: {exc}"
    if isinstance(exc, Exception):
        logger.exception("trial %s hit a bug in the farm", trial_id[:12])
        return "harness_error", harness_detail(exc)
    return None
