"""Cancelling and resuming a distributed sweep.

Cancelling marks the sweep and its not-yet-run trials `cancelled` in the database; a worker that
takes one of their messages checks first and skips it, so nothing recorded is touched and the
queue drains quickly. (Celery's own revoke is not used: workers keep revoked ids in memory, so a
later resume of the same trial ids would be silently dropped.) Resuming re-publishes exactly
the trials that still need a run: pending, cancelled and infra_error ones.
"""

from __future__ import annotations

from celery import Celery
from sqlalchemy import or_, select, update
from sqlalchemy.engine import Engine
from sqlmodel import col

from scheduler.progress import require_sweep
from scheduler.publish import publish_trials
from schema import FarmError, TrialRow, TrialSpec, session_scope


def cancel(*, engine: Engine, sweep_id: str) -> int:
    """Cancel what has not run yet; returns how many trials were cancelled."""
    with session_scope(engine) as session:
        require_sweep(session, sweep_id).status = "cancelled"
        result = session.execute(
            update(TrialRow)
            .where(col(TrialRow.sweep_id) == sweep_id, col(TrialRow.status) == "pending")
            .values(status="cancelled")
        )
    return int(result.rowcount)  # type: ignore[attr-defined]


def resume(*, engine: Engine, app: Celery, sweep_id: str) -> int:
    """Re-publish the pending, cancelled and infra_error trials; returns how many."""
    with session_scope(engine) as session:
        require_sweep(session, sweep_id).status = "active"
        wanted = (
            col(TrialRow.sweep_id) == sweep_id,
            or_(
                col(TrialRow.status).in_(("pending", "cancelled")),
                col(TrialRow.outcome) == "infra_error",
            ),
        )
        rows = session.execute(
            select(col(TrialRow.payload_json), col(TrialRow.queue)).where(*wanted)
        ).all()
        # Refuse before changing anything: a sweep run embedded has no queue to go back to.
        undeclared = sorted({queue for _payload, queue in rows} - set(app.amqp.queues))
        if undeclared:
            raise FarmError(
                f"sweep {sweep_id} has trials for queue(s) {', '.join(undeclared)}, which the "
                "broker does not have: an embedded sweep is resumed with `farm run SWEEP.yaml`; "
                "otherwise declare the tag in FARM_HARDWARE_TAGS"
            )
        session.execute(update(TrialRow).where(*wanted).values(status="pending"))
    return publish_trials(
        app, ((TrialSpec.model_validate_json(payload), queue) for payload, queue in rows)
    )
