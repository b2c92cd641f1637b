"""Comparing answer quality of two sides (typically a tool set against the baseline).

Fairness is compared on scenario-level means only (a paired t over the scenarios both sides
ran); adoption likewise, shown apart. Criterion-level differences are listed for diagnosis, and
any smaller than the judge's noise floor is called noise, never a finding.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_farm.scheduler.scorecard.compare import Side
from mcp_farm.scheduler.scorecard.queries.comparisons import newest_answer_scores
from mcp_farm.scheduler.statistics.judge_variance import (
    DifferenceKind,
    MeanDifference,
    classify_difference,
    compare_means,
)
from mcp_farm.schema import (
    JudgeSettings,
    SpecError,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


@dataclass(frozen=True)
class SideScores:
    fairness: dict[str, float]
    """Scenario → mean fairness."""
    adoption: dict[str, float]
    criteria: dict[str, float]
    """Criterion → mean normalised judge score."""
    noise_floor: float


@dataclass(frozen=True)
class CriterionDiff:
    criterion: str
    a: float
    b: float
    diff: float
    verdict: DifferenceKind


@dataclass(frozen=True)
class AnswerComparison:
    fairness: MeanDifference
    adoption: MeanDifference
    criteria: list[CriterionDiff]
    noise_floor: float


def _matches(side: Side, model: str, config: str) -> bool:
    if side.model and model != side.model:
        return False
    return not side.prompt or config == side.prompt


def side_scores(engine: Engine, side: Side) -> SideScores:
    """One side's scenario-level means from its sweep's newest scoring pass."""
    found = newest_answer_scores(engine, side.sweep_id)
    if found is None:
        raise SpecError("compare", str(side), "this sweep has no answer-quality scores")
    scoring, rows, criteria = found
    fair: dict[str, list[float]] = defaultdict(list)
    adopt: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if _matches(side, r.model_id, r.config):
            fair[r.scenario_id].append(float(r.fairness))
            adopt[r.scenario_id].append(float(r.adoption))
    if not fair:
        raise SpecError("compare", str(side), "no answer-quality scores match this side")
    judge = JudgeSettings.model_validate(json.loads(scoring.config_json)["judge"])
    return SideScores(
        fairness={s: sum(v) / len(v) for s, v in fair.items()},
        adoption={s: sum(v) / len(v) for s, v in adopt.items()},
        criteria={
            c.criterion: float(c.mean) for c in criteria if _matches(side, c.model_id, c.config)
        },
        noise_floor=judge.noise_floor,
    )


def compare_answers(engine: Engine, a: Side, b: Side) -> AnswerComparison:
    left, right = side_scores(engine, a), side_scores(engine, b)
    floor = max(left.noise_floor, right.noise_floor)
    criteria = [
        CriterionDiff(
            criterion=c,
            a=left.criteria[c],
            b=right.criteria[c],
            diff=right.criteria[c] - left.criteria[c],
            verdict=classify_difference(right.criteria[c] - left.criteria[c], floor),
        )
        for c in sorted(left.criteria.keys() & right.criteria.keys())
    ]
    return AnswerComparison(
        fairness=compare_means(left.fairness, right.fairness),
        adoption=compare_means(left.adoption, right.adoption),
        criteria=criteria,
        noise_floor=floor,
    )
