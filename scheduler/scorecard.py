"""Scorecards: pass rates with Wilson intervals, latency percentiles, failure modes."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlmodel import col

from scheduler.stats import percentiles, wilson
from schema import OUTCOMES, ToolCallRow, TrialRow, session_scope

TIERS = ("simple", "moderate", "complex")


@dataclass(frozen=True)
class Cell:
    """Pass rate and latency of one group of trials."""

    key: tuple[str, ...]
    n: int
    passes: int
    low: float
    high: float
    p50: float
    p95: float
    p99: float

    @property
    def rate(self) -> float:
        return self.passes / self.n if self.n else float("nan")


@dataclass
class Scorecard:
    sweep_id: str
    total: int
    done: int
    configs: list[Cell] = field(default_factory=list)
    """Per model × prompt config."""
    by_tool: list[Cell] = field(default_factory=list)
    """Per model × prompt config × expected tool (a trial counts once for each tool it expects)."""
    by_tier: list[Cell] = field(default_factory=list)
    failures: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)
    tool_latency: list[Cell] = field(default_factory=list)
    """Per tool actually called: how often it succeeded, and its call latency."""


def _cell(key: tuple[str, ...], outcomes: list[str], latencies: list[float]) -> Cell:
    passes = sum(1 for o in outcomes if o == "pass")
    low, high = wilson(passes, len(outcomes))
    p50, p95, p99 = percentiles(latencies)
    return Cell(key, len(outcomes), passes, low, high, p50, p95, p99)


def _group(rows: list[tuple[tuple[str, ...], str, float]]) -> list[Cell]:
    outcomes: dict[tuple[str, ...], list[str]] = defaultdict(list)
    latencies: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for key, outcome, latency in rows:
        outcomes[key].append(outcome)
        latencies[key].append(latency)
    return [_cell(k, outcomes[k], latencies[k]) for k in sorted(outcomes, key=_order)]


def _order(key: tuple[str, ...]) -> tuple[object, ...]:
    return tuple((TIERS.index(k), k) if k in TIERS else (len(TIERS), k) for k in key)


def build_scorecard(*, engine: Engine, sweep_id: str) -> Scorecard:
    """Compute the scorecard of one sweep from the stored trials (infra errors excluded)."""
    with session_scope(engine) as session:
        total = session.execute(
            select(func.count()).select_from(TrialRow).where(col(TrialRow.sweep_id) == sweep_id)
        ).scalar_one()
        trials = session.execute(
            select(
                col(TrialRow.model_id),
                col(TrialRow.prompt_id),
                col(TrialRow.tier),
                col(TrialRow.expected_tools),
                col(TrialRow.outcome),
                col(TrialRow.latency_s),
            ).where(col(TrialRow.sweep_id) == sweep_id, col(TrialRow.status) == "done")
        ).all()
        calls = session.execute(
            select(col(ToolCallRow.tool), col(ToolCallRow.ok), col(ToolCallRow.latency_s))
            .join(TrialRow, col(TrialRow.trial_id) == col(ToolCallRow.trial_id))
            .where(col(TrialRow.sweep_id) == sweep_id)
        ).all()
    card = Scorecard(sweep_id=sweep_id, total=total, done=len(trials))
    graded = [t for t in trials if t.outcome != "infra_error"]
    card.configs = _group([((t.model_id, t.prompt_id), t.outcome, t.latency_s) for t in graded])
    card.by_tier = _group(
        [((t.model_id, t.prompt_id, t.tier), t.outcome, t.latency_s) for t in graded]
    )
    card.by_tool = _group(
        [
            ((t.model_id, t.prompt_id, tool), t.outcome, t.latency_s)
            for t in graded
            for tool in dict.fromkeys(json.loads(t.expected_tools))
        ]
    )
    for t in trials:
        card.failures.setdefault((t.model_id, t.prompt_id), Counter())[t.outcome] += 1
    card.tool_latency = _group(
        [((c.tool,), "pass" if c.ok else "error", c.latency_s) for c in calls]
    )
    return card


def outcome_columns(card: Scorecard) -> list[str]:
    """The outcomes that occur in the sweep, in taxonomy order."""
    seen = set().union(*card.failures.values()) if card.failures else set()
    return [o for o in OUTCOMES if o in seen]


def overall_pass_rate(card: Scorecard) -> float:
    n = sum(c.n for c in card.configs)
    return float(np.divide(sum(c.passes for c in card.configs), n)) if n else float("nan")
