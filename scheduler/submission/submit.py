"""Recording a sweep and its pending trials, idempotently, and publishing them to the broker."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime

from celery import Celery
from sqlalchemy import or_, select
from sqlalchemy.engine import Connection, Engine
from sqlmodel import col

from mcp_farm.scheduler.submission.expand import Plan
from mcp_farm.scheduler.submission.publish import publish_trials
from mcp_farm.scheduler.submission.routing import (
    RoutingError,
    queue_of,
)
from mcp_farm.schema import (
    JudgeSettings,
    Settings,
)
from mcp_farm.schema.db import (
    ScoringRow,
    SweepRow,
    TrialRow,
    dialect_insert,
    session_scope,
)

BATCH = 2000
EMBEDDED_QUEUE = "embedded"


def describe(plan: Plan) -> str:
    sweep = plan.sweep
    wording = " (× each wording)" if sweep.paraphrases == "all" else ""
    toolsets = f"{len(sweep.toolsets)} tool set(s) × " if sweep.toolsets else ""
    return (
        f"{len(sweep.models)} model(s) × {len(sweep.prompts)} prompt config(s) × {toolsets}"
        f"{plan.scenario_count} scenario(s) × {sweep.repetitions} repetition(s){wording} = "
        f"{len(plan.trials)} trials"
    )


def record_plan(*, engine: Engine, plan: Plan, queues: dict[str, str] | None = None) -> bool:
    """Insert the sweep and one `pending` row per trial; rows that exist are left alone.

    `queues` maps model ids to the queue their trials go to. Returns whether the sweep is new.
    """
    insert = dialect_insert(engine.dialect.name)
    sweep = {
        "sweep_id": plan.sweep_id,
        "name": plan.sweep.name,
        "spec_json": plan.sweep.model_dump_json(),
        "trial_count": len(plan.trials),
        "created_at": datetime.now(UTC),
        "status": "active",
    }
    queues = queues or {}
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
            "variant": t.variant,
            "toolset": t.toolset_id,
            "status": "pending",
            "queue": queues.get(t.model.id, EMBEDDED_QUEUE),
            "payload_json": t.model_dump_json(),
        }
        for t in plan.trials
    ]
    with engine.begin() as conn:
        created = conn.execute(
            insert(SweepRow)
            .values(sweep)
            .on_conflict_do_nothing()
            .returning(col(SweepRow.sweep_id))
        ).first()
        # One statement, many parameter sets: SQLAlchemy batches them into multi-row inserts
        # itself, far faster than building a VALUES list per chunk (1 ms per row here).
        stmt = insert(TrialRow).on_conflict_do_nothing()
        for start in range(0, len(rows), BATCH):
            conn.execute(stmt, rows[start : start + BATCH])
        if plan.sweep.judge is not None:
            record_scoring(conn, plan.sweep_id, plan.sweep.judge, "run")
    return created is not None


def record_scoring(
    conn: Connection, sweep_id: str, judge: JudgeSettings, kind: str, nonce: str = ""
) -> str:
    """Record a scoring pass (idempotent); returns its id."""
    scoring_id = judge.scoring_id(kind, nonce)
    values = {
        "scoring_id": scoring_id,
        "sweep_id": sweep_id,
        "kind": kind,
        "created_at": datetime.now(UTC),
        "config_json": json.dumps(judge.scoring_config(nonce)),
    }
    conn.execute(
        dialect_insert(conn.dialect.name)(ScoringRow).values(values).on_conflict_do_nothing()
    )
    return scoring_id


def runnable_ids(*, engine: Engine, sweep_id: str) -> set[str]:
    """Trials an embedded run still has to run: pending ones, those that ended in infra_error
    (never the model's), and those left `running` by an earlier run that was killed."""
    with session_scope(engine) as session:
        stmt = select(col(TrialRow.trial_id)).where(
            col(TrialRow.sweep_id) == sweep_id,
            or_(
                col(TrialRow.status).in_(("pending", "running")),
                col(TrialRow.outcome) == "infra_error",
            ),
        )
        return set(session.execute(stmt).scalars())


@dataclass(frozen=True)
class Submission:
    sweep_id: str
    new: bool
    """False when the sweep had been submitted before: nothing was published again."""
    per_queue: Counter[str]
    published: int


def route(plan: Plan, settings: Settings) -> dict[str, str]:
    """Each model's queue; refuses a plan the broker could not deliver safely."""
    queues = {m.id: queue_of(m, settings) for m in plan.sweep.models}
    if plan.longest_trial_s >= settings.visibility_timeout_s:
        raise RoutingError(
            f"a scenario may run {plan.longest_trial_s:g} s but the broker redelivers "
            f"unacknowledged trials after {settings.visibility_timeout_s} s: raise "
            "FARM_VISIBILITY_TIMEOUT_S above the longest time limit (on workers too)"
        )
    return queues


def per_queue(plan: Plan, queues: dict[str, str]) -> Counter[str]:
    return Counter(queues[t.model.id] for t in plan.trials)


def submit(*, plan: Plan, settings: Settings, engine: Engine, app: Celery) -> Submission:
    """Record the sweep and publish one task per trial to its model's queue (once)."""
    queues = route(plan, settings)
    new = record_plan(engine=engine, plan=plan, queues=queues)
    published = 0
    if new:
        published = publish_trials(app, ((t, queues[t.model.id]) for t in plan.trials))
    return Submission(plan.sweep_id, new, per_queue(plan, queues), published)
