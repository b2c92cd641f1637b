"""Task functions, called by name: in-process by the embedded runner, by Celery when distributed.

Each takes one JSON payload and the process's settings, and returns a small JSON summary.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import anyio
from sqlalchemy.engine import Engine

from schema import Settings, TrialSpec, make_engine
from workers.store import save_trial
from workers.trial import execute_trial


@lru_cache(maxsize=4)
def _engine(url: str) -> Engine:
    return make_engine(url)


def run_trial(payload: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """Run the trial described by `payload` and upsert its result."""
    spec = TrialSpec.model_validate(payload)
    result = anyio.run(execute_trial, spec, settings)
    save_trial(engine=_engine(settings.resolved_database_url()), spec=spec, result=result)
    return {"trial_id": spec.trial_id, "outcome": result.outcome, "latency_s": result.latency_s}
