"""Recording a sweep and its pending trials, idempotently."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlmodel import col

from scheduler.expand import Plan
from schema import SweepRow, TrialRow, session_scope

BATCH = 2000


def record_plan(*, engine: Engine, plan: Plan) -> None:
    """Insert the sweep and one `pending` row per trial; rows that exist are left alone."""
    insert = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert
    sweep = {
        "sweep_id": plan.sweep_id,
        "name": plan.sweep.name,
        "spec_json": plan.sweep.model_dump_json(),
        "trial_count": len(plan.trials),
        "created_at": datetime.now(UTC),
    }
    rows = [
        {
            "trial_id": t.trial_id,
            "sweep_id": t.sweep_id,
            "model_id": t.model.id,
            "prompt_id": t.prompt.id,
            "scenario_id": t.scenario.id,
            "scenario_version": t.scenario.version,
            "tier": "",
            "expected_tools": "[]",
            "repetition": t.repetition,
            "status": "pending",
            "payload_json": t.model_dump_json(),
        }
        for t in plan.trials
    ]
    with session_scope(engine) as session:
        session.execute(insert(SweepRow).values(sweep).on_conflict_do_nothing())
        for start in range(0, len(rows), BATCH):
            chunk = rows[start : start + BATCH]
            session.execute(insert(TrialRow).values(chunk).on_conflict_do_nothing())


def runnable_ids(*, engine: Engine, sweep_id: str) -> set[str]:
    """Trials still to run: pending ones, and those that ended in infra_error (never the model's)."""
    with session_scope(engine) as session:
        stmt = select(col(TrialRow.trial_id)).where(
            col(TrialRow.sweep_id) == sweep_id,
            or_(col(TrialRow.status) == "pending", col(TrialRow.outcome) == "infra_error"),
        )
        return set(session.execute(stmt).scalars())
