"""The database side of operations: sweep lookups, progress counts, cancel and resume, the
nodes' rows, and the reads and writes of recovery."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from mcp_farm.schema import FarmError
from mcp_farm.schema.db import (
    NodeRow,
    SweepRow,
    TrialRow,
    session_scope,
)

EMBEDDED_QUEUE = "embedded"
"""The queue name recorded for trials of a sweep run embedded: there is no broker to go back to."""


def require_sweep(session: Session, sweep_id: str) -> SweepRow:
    """The sweep's row, or a FarmError saying it is not in this database."""
    sweep = session.get(SweepRow, sweep_id)
    if sweep is None:
        raise FarmError(f"no sweep {sweep_id!r} in this database (see `farm sweep status`)")
    return sweep


def sweep_spec_json(*, engine: Engine, sweep_id: str) -> str:
    """The sweep file as submitted (JSON), or a FarmError when the sweep is unknown."""
    with session_scope(engine) as session:
        return require_sweep(session, sweep_id).spec_json


def check_sweep(*, engine: Engine, sweep_id: str) -> None:
    """A FarmError when this database has no such sweep."""
    with session_scope(engine) as session:
        require_sweep(session, sweep_id)


def latest_sweep(*, engine: Engine) -> str | None:
    """The newest sweep's id, or None when none is recorded."""
    with session_scope(engine) as session:
        row = session.execute(
            select(col(SweepRow.sweep_id)).order_by(col(SweepRow.created_at).desc())
        ).first()
    return None if row is None else str(row[0])


@dataclass(frozen=True)
class ProgressCounts:
    """A sweep's row and its trials counted by queue and state, by outcome, and over time."""

    name: str
    status: str
    total: int
    by_queue_state: list[tuple[str, str, int]]
    by_outcome: list[tuple[str, int]]
    done_times: tuple[int, datetime | None, datetime | None]
    """Done trials with a finish time: count, first start, last finish."""
    recent: tuple[int, datetime | None]
    """Trials finished since the window's start: count, first finish."""


def progress_counts(*, engine: Engine, sweep_id: str, since: datetime) -> ProgressCounts:
    """Read the sweep's state from the trial table (a few grouped queries, one transaction)."""
    where = col(TrialRow.sweep_id) == sweep_id
    with session_scope(engine) as session:
        sweep = require_sweep(session, sweep_id)
        name, status, total = sweep.name, sweep.status, sweep.trial_count
        by_queue_state = [
            (queue, state, n)
            for queue, state, n in session.execute(
                select(col(TrialRow.queue), col(TrialRow.status), func.count())
                .where(where)
                .group_by(col(TrialRow.queue), col(TrialRow.status))
            )
        ]
        by_outcome = [
            (outcome, n)
            for outcome, n in session.execute(
                select(col(TrialRow.outcome), func.count())
                .where(where, col(TrialRow.status) == "done")
                .group_by(col(TrialRow.outcome))
            )
        ]
        times = session.execute(
            select(
                func.count(),
                func.min(col(TrialRow.started_at)),
                func.max(col(TrialRow.finished_at)),
            ).where(where, col(TrialRow.status) == "done", col(TrialRow.finished_at).is_not(None))
        ).one()
        recent = session.execute(
            select(func.count(), func.min(col(TrialRow.finished_at))).where(
                where, col(TrialRow.status) == "done", col(TrialRow.finished_at) >= since
            )
        ).one()
    return ProgressCounts(
        name, status, total, by_queue_state, by_outcome, tuple(times), tuple(recent)
    )


# ---- cancel and resume ----------------------------------------------------------------------


def cancel_pending(*, engine: Engine, sweep_id: str) -> int:
    """Mark the sweep cancelled and its pending trials too; returns how many trials."""
    with session_scope(engine) as session:
        require_sweep(session, sweep_id).status = "cancelled"
        result = session.execute(
            update(TrialRow)
            .where(col(TrialRow.sweep_id) == sweep_id, col(TrialRow.status) == "pending")
            .values(status="cancelled")
        )
    return int(result.rowcount)  # type: ignore[attr-defined]


Reopened = list[tuple[str, str, str]]
"""(trial id, payload JSON, queue) of each trial a resume makes pending again."""


def reopen_sweep(*, engine: Engine, sweep_id: str, refuse: Callable[[Reopened], None]) -> Reopened:
    """Mark the sweep active and its pending, cancelled and infra_error trials pending, in one
    transaction; `refuse` sees the trials first and may raise to change nothing."""
    with session_scope(engine) as session:
        require_sweep(session, sweep_id).status = "active"
        wanted = (
            col(TrialRow.sweep_id) == sweep_id,
            or_(
                col(TrialRow.status).in_(("pending", "cancelled")),
                col(TrialRow.outcome) == "infra_error",
            ),
        )
        rows: Reopened = [
            (trial_id, payload, queue)
            for trial_id, payload, queue in session.execute(
                select(
                    col(TrialRow.trial_id), col(TrialRow.payload_json), col(TrialRow.queue)
                ).where(*wanted)
            ).all()
        ]
        refuse(rows)
        session.execute(update(TrialRow).where(*wanted).values(status="pending"))
    return rows


# ---- nodes ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeRecord:
    name: str
    host: str
    tags_json: str
    models_json: str
    concurrency: int
    last_heartbeat: datetime
    stopped_at: datetime | None
    trials_done: int


def node_records(*, engine: Engine) -> list[NodeRecord]:
    """Every enrolled node, by name, with the trials it has finished."""
    with session_scope(engine) as session:
        done = dict(
            session.execute(
                select(col(TrialRow.node), func.count())
                .where(col(TrialRow.status) == "done", col(TrialRow.node).is_not(None))
                .group_by(col(TrialRow.node))
            ).all()
        )
        nodes = session.execute(select(NodeRow).order_by(col(NodeRow.name))).scalars().all()
        return [
            NodeRecord(
                name=node.name,
                host=node.host,
                tags_json=node.tags_json,
                models_json=node.models_json,
                concurrency=node.concurrency,
                last_heartbeat=node.last_heartbeat,
                stopped_at=node.stopped_at,
                trials_done=int(done.get(node.name, 0)),
            )
            for node in nodes
        ]


# ---- recovery -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lapsed:
    trial_id: str
    payload_json: str
    queue: str


def lapsed_trials(*, engine: Engine, stale_before: datetime, sweep_id: str | None) -> list[Lapsed]:
    """`running` trials of active distributed sweeps whose lease is older than `stale_before`."""
    where = [
        col(TrialRow.status) == "running",
        or_(col(TrialRow.beat_at).is_(None), col(TrialRow.beat_at) < stale_before),
        col(TrialRow.queue) != EMBEDDED_QUEUE,
        col(SweepRow.status) == "active",
    ]
    if sweep_id is not None:
        where.append(col(TrialRow.sweep_id) == sweep_id)
    stmt = (
        select(col(TrialRow.trial_id), col(TrialRow.payload_json), col(TrialRow.queue))
        .join(SweepRow, col(SweepRow.sweep_id) == col(TrialRow.sweep_id))
        .where(*where)
    )
    with engine.connect() as conn:
        return [Lapsed(*row) for row in conn.execute(stmt).all()]


def release_lapsed(engine: Engine, trial_id: str) -> bool:
    """Mark a lapsed trial pending, only if it is still `running`; whether it was."""
    with engine.begin() as conn:
        done = conn.execute(
            update(TrialRow)
            .where(col(TrialRow.trial_id) == trial_id, col(TrialRow.status) == "running")
            .values(status="pending", detail="requeued: its worker stopped renewing its lease")
        )
    return bool(done.rowcount)


def pending_of_active_sweeps(*, engine: Engine, trial_ids: Iterable[Any]) -> set[str]:
    """Which of `trial_ids` are pending trials of active sweeps."""
    with engine.connect() as conn:
        return set(
            conn.execute(
                select(col(TrialRow.trial_id))
                .join(SweepRow, col(SweepRow.sweep_id) == col(TrialRow.sweep_id))
                .where(
                    col(TrialRow.trial_id).in_(set(trial_ids)),
                    col(TrialRow.status) == "pending",
                    col(SweepRow.status) == "active",
                )
            ).scalars()
        )


def finished_of(*, engine: Engine, trial_ids: Iterable[Any]) -> set[str]:
    """Which of `trial_ids` are recorded (done), whatever their sweep's state."""
    with engine.connect() as conn:
        return set(
            conn.execute(
                select(col(TrialRow.trial_id)).where(
                    col(TrialRow.trial_id).in_(set(trial_ids)), col(TrialRow.status) == "done"
                )
            ).scalars()
        )


def _old_pending(created_before: datetime) -> tuple[Any, ...]:
    """Pending trials of active sweeps submitted before `created_before` (a trial joined to
    its sweep)."""
    return (
        col(TrialRow.status) == "pending",
        col(SweepRow.status) == "active",
        col(SweepRow.created_at) < created_before,
    )


def pending_counts(*, engine: Engine, created_before: datetime) -> dict[str, int]:
    """Per queue: the pending trials of active sweeps submitted before `created_before` (a
    sweep still being published has pending rows whose messages are on their way)."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(col(TrialRow.queue), func.count())
            .join(SweepRow, col(SweepRow.sweep_id) == col(TrialRow.sweep_id))
            .where(*_old_pending(created_before), col(TrialRow.queue) != EMBEDDED_QUEUE)
            .group_by(col(TrialRow.queue))
        ).all()
    return {queue: int(n) for queue, n in rows}


def pending_payloads(
    *, engine: Engine, queues: Iterable[str], created_before: datetime
) -> list[tuple[str, str, str]]:
    """(trial id, payload, queue) of the pending trials `pending_counts` counted, in `queues`."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(col(TrialRow.trial_id), col(TrialRow.payload_json), col(TrialRow.queue))
            .join(SweepRow, col(SweepRow.sweep_id) == col(TrialRow.sweep_id))
            .where(*_old_pending(created_before), col(TrialRow.queue).in_(set(queues)))
        ).all()
    return [(trial_id, payload, queue) for trial_id, payload, queue in rows]
