"""The simulated-user part of a scorecard: per config, the pass rate over all its trials with
a simulated user and over those without a user error, side by side, the failures by source,
and the user identities pooled (docs/simulated-user.md)."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from mcp_farm.scheduler.scorecard.queries.conversations import user_counts, user_identities
from mcp_farm.schema.scorecard import SimulatedUsers

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def simulated_users(conn: Connection, sweep_id: str, skip_left: bool) -> list[SimulatedUsers]:
    """One entry per model × config that ran simulated-user scenarios, in their order."""
    users: dict[tuple[str, str], list[str]] = defaultdict(list)
    for model, config, identity in user_identities(conn, sweep_id, skip_left):
        users[(model, config)].append(identity or "")
    return [
        SimulatedUsers(
            model=r.model_id,
            prompt=r.config,
            trials=int(r.n),
            passed=int(r.passed or 0),
            rate=_rate(int(r.passed or 0), int(r.n)),
            clean=int(r.clean or 0),
            clean_passed=int(r.clean_passed or 0),
            clean_rate=_rate(int(r.clean_passed or 0), int(r.clean or 0)),
            user_failures=int(r.by_user or 0),
            agent_failures=int(r.by_agent or 0),
            users=users[(r.model_id, r.config)],
        )
        for r in user_counts(conn, sweep_id, skip_left)
    ]
