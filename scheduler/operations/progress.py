"""Where a sweep stands: counts by state and by queue, the pass rate so far, and an ETA."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from mcp_farm.scheduler.operations.queries import latest_sweep, progress_counts
from mcp_farm.schema import UNGRADED, FarmError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

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
        graded = sum(n for o, n in self.outcomes.items() if o not in UNGRADED)
        return self.outcomes["pass"] / graded if graded else None

    @property
    def eta_s(self) -> float | None:
        if not self.remaining:
            return 0.0
        return self.remaining / self.recent_per_s if self.recent_per_s > 0 else None


def as_utc(value: datetime) -> datetime:
    """A stored timestamp as an aware UTC datetime (SQLite hands them back naive)."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def latest_sweep_id(*, engine: Engine) -> str:
    found = latest_sweep(engine=engine)
    if found is None:
        raise FarmError(
            "no sweep recorded in this database yet: run one here with "
            "`farm run scenarios/sweeps/quickstart.yaml` (embedded, nothing else needed), or "
            "submit one to the distributed farm with `farm sweep submit SWEEP.yaml`"
        )
    return found


def sweep_progress(*, engine: Engine, sweep_id: str) -> SweepProgress:
    """Read the sweep's state from the trial table (a few grouped queries)."""
    counts = progress_counts(
        engine=engine, sweep_id=sweep_id, since=datetime.now(UTC) - RATE_WINDOW
    )
    progress = SweepProgress(sweep_id, counts.name, counts.status, counts.total)
    per_queue: dict[str, Counter[str]] = defaultdict(Counter)
    for queue, state, n in counts.by_queue_state:
        per_queue[queue][state] += n
        progress.by_state[state] += n
    progress.by_queue = dict(sorted(per_queue.items()))
    for outcome, n in counts.by_outcome:
        progress.outcomes[outcome] += n
    _overall(progress, *counts.done_times)
    count, first = counts.recent
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
