"""Where a sweep stands: counts by state and by queue, the pass rate so far, and an ETA."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlmodel import Session, col

from mcp_farm.schema import FarmError
from mcp_farm.schema.db import (
    SweepRow,
    TrialRow,
    session_scope,
)

RATE_WINDOW = timedelta(minutes=2)
STATES = ("pending", "running", "done", "cancelled")


@dataclass
class SweepProgress:
    sweep_id: str
    name: str
    status: str
    total: int
    by_state: Counter[str] = field(default_factory=Counter)
    by_queue: dict[str, Counter[str]] = field(default_factory=dict)
    outcomes: Counter[str] = field(default_factory=Counter)
    recent_per_s: float = 0.0
    """Trials finished per second over the last two minutes."""
    overall_per_s: float | None = None
    """Trials finished per second from the first start to the last finish; None before two
    trials have times."""
    took_s: float | None = None
    """Seconds from the first trial's start to the last one's finish, so far."""

    @property
    def state(self) -> str:
        """What the sweep is now: `finished` (or `cancelled`) once no trial is left to run.

        The stored status only says whether the sweep was cancelled; a sweep whose trials have
        all run stays `active` there, and listing it so (at 0 trials/s) would mislead.
        """
        if self.remaining:
            return self.status
        return "cancelled" if self.status == "cancelled" else "finished"

    @property
    def finished(self) -> int:
        return self.by_state["done"] + self.by_state["cancelled"]

    @property
    def remaining(self) -> int:
        return self.by_state["pending"] + self.by_state["running"]

    @property
    def pass_rate(self) -> float | None:
        graded = sum(n for o, n in self.outcomes.items() if o != "infra_error")
        return self.outcomes["pass"] / graded if graded else None

    @property
    def eta_s(self) -> float | None:
        if not self.remaining:
            return 0.0
        return self.remaining / self.recent_per_s if self.recent_per_s > 0 else None


def as_utc(value: datetime) -> datetime:
    """A stored timestamp as an aware UTC datetime (SQLite hands them back naive)."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def require_sweep(session: Session, sweep_id: str) -> SweepRow:
    """The sweep's row, or a FarmError saying it is not in this database."""
    sweep = session.get(SweepRow, sweep_id)
    if sweep is None:
        raise FarmError(f"no sweep {sweep_id!r} in this database (see `farm sweep status`)")
    return sweep


def latest_sweep_id(*, engine: Engine) -> str:
    with session_scope(engine) as session:
        row = session.execute(
            select(col(SweepRow.sweep_id)).order_by(col(SweepRow.created_at).desc())
        ).first()
    if row is None:
        raise FarmError(
            "no sweep recorded in this database yet: run one here with "
            "`farm run scenarios/sweeps/quickstart.yaml` (embedded, nothing else needed), or "
            "submit one to the distributed farm with `farm sweep submit SWEEP.yaml`"
        )
    return str(row[0])


def sweep_progress(*, engine: Engine, sweep_id: str) -> SweepProgress:
    """Read the sweep's state from the trial table (a few grouped queries)."""
    where = col(TrialRow.sweep_id) == sweep_id
    with session_scope(engine) as session:
        sweep = require_sweep(session, sweep_id)
        progress = SweepProgress(sweep_id, sweep.name, sweep.status, sweep.trial_count)
        per_queue: dict[str, Counter[str]] = defaultdict(Counter)
        for queue, state, n in session.execute(
            select(col(TrialRow.queue), col(TrialRow.status), func.count())
            .where(where)
            .group_by(col(TrialRow.queue), col(TrialRow.status))
        ):
            per_queue[queue][state] += n
            progress.by_state[state] += n
        progress.by_queue = dict(sorted(per_queue.items()))
        for outcome, n in session.execute(
            select(col(TrialRow.outcome), func.count())
            .where(where, col(TrialRow.status) == "done")
            .group_by(col(TrialRow.outcome))
        ):
            progress.outcomes[outcome] += n
        times = session.execute(
            select(
                func.count(),
                func.min(col(TrialRow.started_at)),
                func.max(col(TrialRow.finished_at)),
            ).where(where, col(TrialRow.status) == "done", col(TrialRow.finished_at).is_not(None))
        ).one()
        since = datetime.now(UTC) - RATE_WINDOW
        recent = session.execute(
            select(func.count(), func.min(col(TrialRow.finished_at))).where(
                where, col(TrialRow.status) == "done", col(TrialRow.finished_at) >= since
            )
        ).one()
    _overall(progress, *times)
    count, first = recent
    if count and first is not None:
        span = (datetime.now(UTC) - as_utc(first)).total_seconds()
        progress.recent_per_s = count / max(span, 1.0)
    return progress


def _overall(
    progress: SweepProgress, count: int, first: datetime | None, last: datetime | None
) -> None:
    """Fill the sweep's overall rate and duration from its done trials' times."""
    if not count or first is None or last is None:
        return
    took = (as_utc(last) - as_utc(first)).total_seconds()
    progress.took_s = max(took, 0.0)
    if took > 0:
        progress.overall_per_s = count / took
