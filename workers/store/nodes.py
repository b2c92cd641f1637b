"""What a worker node writes about itself: its row in the node table and its trials' leases."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from mcp_farm.schema.db import (
    NodeRow,
    SweepRow,
    TrialRow,
    session_scope,
    upsert,
)


def enrol_node(engine: Engine, row: dict[str, Any]) -> None:
    """Insert the node's row, or replace the one left under its name by an earlier run."""
    stmt = upsert(engine, NodeRow, row, "name")
    with session_scope(engine) as session:
        session.execute(stmt)


def update_node(engine: Engine, name: str, **values: Any) -> None:
    """Set columns of the node row called `name` (a heartbeat, the time it stopped)."""
    with session_scope(engine) as session:
        session.execute(update(NodeRow).where(col(NodeRow.name) == name).values(**values))


def renew_leases(engine: Engine, trial_ids: list[str]) -> int:
    """Stamp the lease of every trial in `trial_ids` still `running`, in one UPDATE; returns
    how many rows it renewed."""
    with engine.begin() as conn:
        done = conn.execute(
            update(TrialRow)
            .where(col(TrialRow.trial_id).in_(trial_ids), col(TrialRow.status) == "running")
            .values(beat_at=datetime.now(UTC))
        )
    return int(done.rowcount)


def waiting_sweeps(engine: Engine, queues: list[str]) -> list[tuple[str, str]]:
    """(name, spec JSON) of each active sweep with a trial pending or running in `queues`."""
    waiting = select(TrialRow.sweep_id).where(
        col(TrialRow.status).in_(("pending", "running")), col(TrialRow.queue).in_(queues)
    )
    with session_scope(engine) as session:
        rows = session.exec(
            select(SweepRow.name, SweepRow.spec_json).where(
                col(SweepRow.status) == "active", col(SweepRow.sweep_id).in_(waiting)
            )
        ).all()
    return [(name, spec_json) for name, spec_json in rows]
