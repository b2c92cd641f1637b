"""The simulated-user part of a scorecard: per config, the pass rate over all its trials with
a simulated user and over those without a user error, side by side, the failures by source,
the user identities pooled, and the variance split between agent and user where the sweep
crossed repetitions with user seeds (docs/simulated-user.md)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import TYPE_CHECKING

from mcp_farm.scheduler.scorecard.queries.conversations import (
    user_cells,
    user_counts,
    user_identities,
)
from mcp_farm.scheduler.statistics.user_variance import Z95, components, mean_se, tables_of
from mcp_farm.schema.scorecard import SimulatedUsers, UserVariance

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def user_variances(conn: Connection, sweep_id: str, skip_left: bool) -> dict[str, UserVariance]:
    """Config key (`model\x1fconfig`) → its agent × user variance split, for the configs
    whose scenarios have at least 2 repetitions × 2 user seeds."""
    rows = [
        {
            "config": f"{r.model_id}\x1f{r.config}",
            "scenario": r.scenario_id,
            "agent": (int(r.repetition), int(r.variant)),
            "user": int(json.loads(r.user_sim_json)["identity"]["seed"]),
            "outcome": r.outcome == "pass",
        }
        for r in user_cells(conn, sweep_id, skip_left)
        if r.user_sim_json
    ]
    found = {}
    for config, tables in tables_of(rows).items():
        parts = components(tables)
        if parts is None:
            continue
        se = mean_se(parts, parts.k, parts.m, parts.scenarios)
        found[config] = UserVariance(
            scenarios=parts.scenarios,
            repetitions=parts.k,
            seeds=parts.m,
            agent=parts.agent,
            user=parts.user,
            rest=parts.rest,
            clamped=list(parts.clamped),
            user_icc=parts.user_icc,
            resolution=Z95 * se,
        )
    return found


def simulated_users(conn: Connection, sweep_id: str, skip_left: bool) -> list[SimulatedUsers]:
    """One entry per model × config that ran simulated-user scenarios, in their order."""
    users: dict[tuple[str, str], list[str]] = defaultdict(list)
    for model, config, identity in user_identities(conn, sweep_id, skip_left):
        users[(model, config)].append(identity or "")
    variances = user_variances(conn, sweep_id, skip_left)
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
            variance=variances.get(f"{r.model_id}\x1f{r.config}"),
        )
        for r in user_counts(conn, sweep_id, skip_left)
    ]
