"""The database side of submission: recording a sweep, its trials and its scoring passes
(idempotently), and finding what an embedded run still has to run."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, NamedTuple

from sqlalchemy import or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlmodel import col

from mcp_farm.scheduler.operations.queries import EMBEDDED_QUEUE
from mcp_farm.scheduler.submission.expand import Plan
from mcp_farm.schema import JudgeSettings
from mcp_farm.schema.db import (
    ScoringRow,
    SweepRow,
    ToolCallRow,
    TrialRow,
    dialect_insert,
    session_scope,
)

BATCH = 2000


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


def record_rescoring(engine: Engine, sweep_id: str, judge: JudgeSettings, nonce: str) -> str:
    """Record a rescore's scoring pass in its own transaction; returns its id."""
    with engine.begin() as conn:
        return record_scoring(conn, sweep_id, judge, "rescore", nonce)


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


def reopen_for_rerun(*, engine: Engine, plan: Plan, queues: dict[str, str]) -> None:
    """Make every trial of a recorded plan pending again, on its model's queue, and its sweep
    active, in one transaction: a distributed re-run (`farm replay --rerun --submit`). Each
    trial keeps its last result until a worker records the new one."""
    by_queue: dict[str, list[str]] = {}
    for t in plan.trials:
        by_queue.setdefault(queues[t.model.id], []).append(t.trial_id)
    with engine.begin() as conn:
        conn.execute(
            update(SweepRow).where(col(SweepRow.sweep_id) == plan.sweep_id).values(status="active")
        )
        for queue, ids in by_queue.items():
            for start in range(0, len(ids), BATCH):
                conn.execute(
                    update(TrialRow)
                    .where(col(TrialRow.trial_id).in_(ids[start : start + BATCH]))
                    .values(status="pending", queue=queue)
                )


def sweep_spec_json(*, engine: Engine, sweep_id: str) -> str | None:
    """The recorded sweep's spec (its SweepSpec as JSON), or None when there is no such sweep."""
    with session_scope(engine) as session:
        found = session.execute(
            select(col(SweepRow.spec_json)).where(col(SweepRow.sweep_id) == sweep_id)
        ).first()
        return None if found is None else str(found[0])


def recorded_trials(*, engine: Engine, sweep_id: str) -> list[Any]:
    """A sweep's recorded (done) trials: their keys, outcome, stop reason, detail,
    transcript, provenance, turns (a conversation's) and state probes' results."""
    with session_scope(engine) as session:
        return list(
            session.execute(
                select(
                    col(TrialRow.trial_id),
                    col(TrialRow.model_id),
                    col(TrialRow.prompt_id),
                    col(TrialRow.scenario_id),
                    col(TrialRow.toolset),
                    col(TrialRow.repetition),
                    col(TrialRow.variant),
                    col(TrialRow.outcome),
                    col(TrialRow.stop_reason),
                    col(TrialRow.detail),
                    col(TrialRow.transcript_json),
                    col(TrialRow.provenance_json),
                    col(TrialRow.turns_json),
                    col(TrialRow.state_json),
                ).where(col(TrialRow.sweep_id) == sweep_id, col(TrialRow.status) == "done")
            ).all()
        )


class RecordedCall(NamedTuple):
    """One stored tool call, as replay compares it."""

    tool: str
    ok: bool
    error: str
    server: str | None
    digest: str
    whole_json: str


def recorded_calls(*, engine: Engine, sweep_id: str) -> dict[str, list[RecordedCall]]:
    """trial id → its tool calls in order."""
    found: dict[str, list[RecordedCall]] = {}
    with session_scope(engine) as session:
        rows = session.execute(
            select(
                col(ToolCallRow.trial_id),
                col(ToolCallRow.tool),
                col(ToolCallRow.ok),
                col(ToolCallRow.error),
                col(ToolCallRow.server),
                col(ToolCallRow.result_digest),
                col(ToolCallRow.whole_json),
            )
            .where(col(ToolCallRow.sweep_id) == sweep_id)
            .order_by(col(ToolCallRow.trial_id), col(ToolCallRow.idx))
        )
        for trial_id, tool, ok, error, server, digest, whole in rows:
            call = RecordedCall(tool, bool(ok), error or "", server, digest or "", whole or "")
            found.setdefault(trial_id, []).append(call)
    return found


class UserConversation(NamedTuple):
    """A recorded trial with a simulated user, as `farm users freeze` reads it."""

    trial_id: str
    scenario_id: str
    repetition: int
    payload_json: str
    transcript_json: str
    user_sim_json: str


def user_conversations(
    engine: Engine, sweep_id: str, repetition: int | None
) -> list[UserConversation]:
    """The sweep's trials that recorded a simulated user (of one repetition, when given),
    lowest repetition first."""
    query = select(
        col(TrialRow.trial_id),
        col(TrialRow.scenario_id),
        col(TrialRow.repetition),
        col(TrialRow.payload_json),
        col(TrialRow.transcript_json),
        col(TrialRow.user_sim_json),
    ).where(col(TrialRow.sweep_id) == sweep_id, col(TrialRow.user_sim_json) != "")
    if repetition is not None:
        query = query.where(col(TrialRow.repetition) == repetition)
    with engine.connect() as conn:
        rows = conn.execute(query.order_by(col(TrialRow.repetition), col(TrialRow.trial_id)))
        return [UserConversation(*row) for row in rows]
