"""Task functions, called by name: in-process by the embedded runner, by Celery when distributed.

Each takes one JSON payload and the process's settings, and returns a small JSON summary.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy.exc import DBAPIError

from mcp_farm.schema import (
    FarmError,
    Settings,
    StoreError,
    TrialResult,
    TrialSpec,
)
from mcp_farm.schema.db import make_engine
from mcp_farm.schema.tasks.messages import (
    TrialDone,
    TrialHeld,
    TrialRetry,
    TrialSkipped,
    TrialSummary,
    read_message,
)
from mcp_farm.workers.errors import harness_detail
from mcp_farm.workers.node.lease import leases_for
from mcp_farm.workers.node.outage import DATABASE
from mcp_farm.workers.node.runtime import get_runtime
from mcp_farm.workers.store.results import (
    FailedOutcome,
    claim_trial,
    fail_trial,
    mark_retrying,
    save_trial,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

logger = logging.getLogger(__name__)

T = TypeVar("T")
MAX_POOL = 12
FIRST_WAIT_S = 0.5
LONGEST_WAIT_S = 10.0


@lru_cache(maxsize=4)
def engine_for(url: str, pool_size: int = 5, *, pre_ping: bool = True) -> Engine:
    """One engine (connection pool) per database URL per process."""
    return make_engine(url, pool_size, pre_ping=pre_ping)


def _dropped(exc: StoreError) -> bool:
    """Whether `exc` came from a pooled connection the server had closed (a restart, an idle
    timeout). SQLAlchemy has then discarded every connection pooled before it."""
    cause = exc.__cause__
    return isinstance(cause, DBAPIError) and cause.connection_invalidated


def patiently(step: Callable[[], T], *, budget_s: float, what: str) -> T:
    """Run a database step, retrying with doubling waits while the database is away; after
    `budget_s` the last StoreError propagates (the caller gives the message back).

    The first failure on a connection the server had dropped is retried at once: a fresh
    connection may well work, and that is how a dropped one is found without a ping per use.
    """
    deadline = time.monotonic() + budget_s
    wait = FIRST_WAIT_S
    fresh_tried = False
    while True:
        try:
            done = step()
        except StoreError as exc:
            if _dropped(exc) and not fresh_tried:
                fresh_tried = True
                logger.info("%s: a pooled connection was dropped; trying a fresh one", what)
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            # One line when the outage starts and a summary while it lasts (node/outage.py),
            # and one for each step that waits, the first time it does.
            DATABASE.failed("trial claim or save", exc)
            if wait == FIRST_WAIT_S:
                logger.info("%s waits for the database (up to %g s)", what, budget_s)
            time.sleep(min(wait, left))
            wait = min(wait * 2, LONGEST_WAIT_S)
        else:
            DATABASE.ok()
            return done


@dataclass(frozen=True)
class Unrun:
    """Why a trial could not be run at all, and as what it is recorded."""

    outcome: FailedOutcome
    problem: str


def _run(spec: TrialSpec, settings: Settings) -> TrialResult | Unrun:
    """The trial's result, or why it could not be run at all.

    Running classifies everything a trial meets (model, servers, grading); what escapes is a
    trial that cannot start, such as a scenario edited since the sweep was planned (a
    FarmError: `infra_error`), or a bug in the farm itself (any other exception:
    `harness_error`, with its traceback). Either way the trial ends recorded, never `running`.
    """
    try:
        return get_runtime(settings).run(spec, settings)
    except FarmError as exc:  # a boundary: logged, then recorded as the trial's infra_error
        logger.exception("trial %s could not be run", spec.trial_id[:12])
        return Unrun("infra_error", f"could not run: {type(exc).__name__}: {exc}")
    except Exception as exc:  # a boundary: a bug in the farm, recorded and never retried
        logger.exception("trial %s hit a bug in the farm", spec.trial_id[:12])
        return Unrun("harness_error", harness_detail(exc))


def run_trial(
    payload: TrialSpec | dict[str, Any],
    settings: Settings,
    *,
    force: bool = False,
    record_infra: bool = True,
    takeover: bool = False,
) -> TrialSummary:
    """Task `farm.run_trial`: run the trial described by `payload` and upsert its result.

    `force` runs it even if already recorded (a re-run). With `record_infra=False` an
    infrastructure failure is not recorded but reported as `retry`, so the caller can try
    again. `takeover` claims a `running` trial whatever its lease says (the embedded runner:
    only a killed earlier run of the same sweep can hold it). A trial another live process
    holds is reported as `held` and not run. The database may be away for up to
    `settings.store_retry_s` at the claim and again at the save; past that a StoreError
    propagates, and a finished result is not recorded (the caller must not acknowledge it).
    """
    spec = read_message("farm.run_trial", payload, TrialSpec)
    # Database work is milliseconds of a trial's seconds: a few connections serve many
    # sessions, and PostgreSQL refuses clients past max_connections (100 by default). No
    # pre-ping (a round trip per checkout, three per trial): every step here is retried by
    # `patiently`, at once when the pool held a connection the server had dropped.
    engine = engine_for(
        settings.resolved_database_url(), min(settings.sessions + 2, MAX_POOL), pre_ping=False
    )
    ids = {"trial_id": spec.trial_id, "sweep_id": spec.sweep_id}
    stale_before = datetime.now(UTC) - timedelta(
        seconds=0 if takeover else settings.stale_after_s()
    )
    claim = patiently(
        lambda: claim_trial(
            engine=engine,
            trial_id=spec.trial_id,
            node=settings.node_name,
            stale_before=stale_before,
            force=force,
        ),
        budget_s=settings.store_retry_s,
        what=f"trial {spec.trial_id[:12]}",
    )
    if claim == "held":
        return TrialHeld(**ids, reason="another live process is running it")
    if claim != "claimed":
        return TrialSkipped(**ids, reason="already recorded" if claim == "recorded" else claim)
    with leases_for(engine, settings.heartbeat_s).hold(spec.trial_id):
        result = _run(spec, settings)
        problem = result.problem if isinstance(result, Unrun) else result.detail
        if result.outcome == "infra_error" and not record_infra:
            detail = f"retrying: {problem}"
            patiently(
                lambda: mark_retrying(engine=engine, trial_id=spec.trial_id, detail=detail),
                budget_s=settings.store_retry_s,
                what=f"trial {spec.trial_id[:12]}",
            )
            return TrialRetry(**ids, problem=problem)
        if isinstance(result, Unrun):
            failed = result.outcome
            left = patiently(
                lambda: fail_trial(engine=engine, spec=spec, detail=problem, outcome=failed),
                budget_s=settings.store_retry_s,
                what=f"trial {spec.trial_id[:12]} could not run ({problem.splitlines()[0]}) and",
            )
            return TrialDone(**ids, outcome=failed, last=not left)
        left = patiently(
            lambda: save_trial(engine=engine, spec=spec, result=result),
            budget_s=settings.store_retry_s,
            what=f"trial {spec.trial_id[:12]} finished ({result.outcome}) but",
        )
    return TrialDone(
        **ids,
        outcome=result.outcome,
        latency_s=result.latency_s,
        model_s=result.model_s,
        last=not left,
    )
