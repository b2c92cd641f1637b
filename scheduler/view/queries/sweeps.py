"""The sweep list's SQL: every sweep (or the one named), newest first, with its trials by state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine


@dataclass(frozen=True)
class SweepLine:
    """One sweep as the sweep list shows it."""

    sweep_id: str
    name: str
    status: str
    created_at: Any
    total: int
    pending: int
    running: int
    cancelled: int

    @property
    def done(self) -> int:
        return max(self.total - self.pending - self.running - self.cancelled, 0)

    @property
    def live(self) -> bool:
        """Trials are still to run: the page showing it refreshes itself."""
        return self.status != "cancelled" and (self.pending + self.running) > 0


SWEEPS_SQL = (
    "select sweep_id, name, status, created_at, trial_count from sweep order by created_at desc"
)
ONE_SWEEP_SQL = (
    "select sweep_id, name, status, created_at, trial_count from sweep where sweep_id = :sweep"
)
# Unfinished trials through (sweep_id, status): a finished sweep costs an empty range.
UNFINISHED_SQL = """
select status, count(*) as n from trial
where sweep_id = :sweep and status in ('pending', 'running', 'cancelled')
group by status
"""


def sweep_lines(*, engine: Engine, sweep_id: str | None = None) -> list[SweepLine]:
    """Every sweep (or the one named), newest first, with its trials by state."""
    found = []
    with engine.connect() as conn:
        listed = (
            conn.execute(text(SWEEPS_SQL))
            if sweep_id is None
            else conn.execute(text(ONE_SWEEP_SQL), {"sweep": sweep_id})
        )
        for s in listed:
            states: dict[str, int] = dict(
                conn.execute(text(UNFINISHED_SQL), {"sweep": s.sweep_id}).all()
            )
            found.append(
                SweepLine(
                    s.sweep_id,
                    s.name,
                    s.status,
                    s.created_at,
                    # Recorded at submission, as `farm sweep status` reads it: never a count.
                    int(s.trial_count),
                    int(states.get("pending", 0)),
                    int(states.get("running", 0)),
                    int(states.get("cancelled", 0)),
                )
            )
    return found
