"""Task functions, called by name: in-process by the embedded runner, by Celery when distributed.

Each takes one JSON payload and the process's settings, and returns a small JSON summary.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sqlalchemy.engine import Engine

from schema import Settings, TrialSpec, make_engine
from workers.runtime import get_runtime
from workers.store import claim_trial, mark_retrying, save_trial


@lru_cache(maxsize=4)
def engine_for(url: str) -> Engine:
    """One engine (connection pool) per database URL per process."""
    return make_engine(url)


def run_trial(
    payload: dict[str, Any], settings: Settings, *, force: bool = False, record_infra: bool = True
) -> dict[str, Any]:
    """Run the trial described by `payload` and upsert its result.

    `force` runs it even if already recorded (a re-run). With `record_infra=False` an
    infrastructure failure is not recorded but reported as `retry`, so the caller can try again.
    """
    spec = TrialSpec.model_validate(payload)
    engine = engine_for(settings.resolved_database_url())
    summary: dict[str, Any] = {"trial_id": spec.trial_id, "sweep_id": spec.sweep_id}
    skip = claim_trial(engine=engine, trial_id=spec.trial_id, node=settings.node_name, force=force)
    if skip:
        return summary | {"skipped": skip}
    result = get_runtime(settings).run(spec, settings)
    if result.outcome == "infra_error" and not record_infra:
        mark_retrying(engine=engine, trial_id=spec.trial_id, detail=f"retrying: {result.detail}")
        return summary | {"retry": result.detail}
    left = save_trial(engine=engine, spec=spec, result=result)
    return summary | {"outcome": result.outcome, "latency_s": result.latency_s, "last": not left}
