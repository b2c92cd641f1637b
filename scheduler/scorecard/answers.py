"""The answer-quality part of a scorecard: fairness and adoption side by side per configuration
and scenario, grounding buckets, tokens by phase, and each judge's variance across runs.

Built from one scoring pass (the latest, unless named): answer_score rows give the layers,
judgement rows the judge's duplicate runs. Rankings use scenario-level means only.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mcp_farm.scheduler.scorecard.queries.answers import (
    anchor_check,
    answer_scores,
    judgements,
    rubric_hashes,
    scoring_passes,
)
from mcp_farm.scheduler.statistics.judge_variance import (
    judge_variance,
    mean_interval,
)
from mcp_farm.schema import JudgeSettings
from mcp_farm.schema.scorecard import (
    ANCHOR_THRESHOLD,
    AnswerQuality,
    AnswerRow,
    JudgeVariance,
    Ranked,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

MEANS = (
    "keyword_coverage",
    "judge_quality",
    "grounding_rate",
    "efficiency",
    "adoption",
    "tool_fluency",
    "discoverability",
    "judge_s",
    "model_s",
)
SUMS = (
    "grounded",
    "unresolved",
    "hallucinated",
    "tokens_tool_io",
    "tokens_verification",
)


def _mean(values: list[Any]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _reasoning(rows: list[Any]) -> int | None:
    """Reasoning tokens summed over the scores that measured them; None, "not measured", where
    none did (an agent whose model calls did not pass the farm): never 0."""
    measured = [r.tokens_reasoning or 0 for r in rows if r.tokens_measured]
    return sum(measured) if measured else None


def _row(
    dimension: str, key: tuple[str, str, str, bool], scenario: str, rows: list[Any]
) -> AnswerRow:
    model, config, toolset, baseline = key
    per_scenario: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        per_scenario[r.scenario_id].append(float(r.fairness))
    means = [sum(v) / len(v) for v in per_scenario.values()]
    centre, low, high = mean_interval(means)
    # Fairness lives in [0, 1]; a t interval over few scenarios can reach past either end.
    low = None if low is None else max(0.0, low)
    high = None if high is None else min(1.0, high)
    values = {name: _mean([getattr(r, name) for r in rows]) for name in MEANS}
    if baseline:
        values |= {"adoption": 0.0, "tool_fluency": None, "discoverability": None}
    estimated = sorted({p for r in rows for p in json.loads(r.estimated_json or "[]")})
    return AnswerRow(
        dimension=dimension,
        model=model,
        prompt=config,
        toolset=toolset,
        baseline=baseline,
        key=scenario,
        n=len(rows),
        scenarios=len(per_scenario),
        fairness=centre,
        fairness_low=low,
        fairness_high=high,
        estimated=estimated,
        tokens_reasoning=_reasoning(rows),
        **values,
        **{name: int(sum(getattr(r, name) or 0 for r in rows)) for name in SUMS},
    )


def _variance(
    conn: Connection, sweep_id: str, scoring: str, settings: JudgeSettings, anchors: dict[str, Any]
) -> list[JudgeVariance]:
    rows = judgements(conn, sweep_id, scoring)
    by_judge: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_judge[(r.judge_model, r.rubric_id, r.rubric_hash)].append(
            {
                "config": f"{r.model_id}/{r.config}",
                "scenario": r.scenario_id,
                "trial": r.trial_id,
                "run": r.run,
                "step": r.step,
                "criterion": r.criterion,
                "score": math.nan if r.normalized is None else float(r.normalized),
            }
        )
    found = []
    for (judge, rubric_id, rubric_hash), records in sorted(by_judge.items()):
        v = judge_variance(records, noise_floor=settings.noise_floor)
        check = anchors.get(rubric_hash)
        found.append(
            JudgeVariance(
                judge=judge,
                rubric_id=rubric_id,
                rubric_hash=rubric_hash,
                trials=v.trials,
                runs=settings.runs,  # as configured; unreadable replies are counted apart
                unreadable=v.unreadable,
                sigma_criterion=v.sigma_criterion,
                sigma_step=v.sigma_step,
                sigma_scenario=v.sigma_scenario,
                icc1=v.icc1,
                resolution=v.resolution,
                resolution_80=v.resolution_80,
                noise_floor=settings.noise_floor,
                per_criterion=dict(v.per_criterion),
                **_verdict(check),
            )
        )
    return found


def _verdict(check: Any | None) -> dict[str, Any]:
    """The JudgeVariance fields of the deciding anchor check row: its verdict, ρ and time, and
    what it verified (folder, lock hash, threshold, whether that was lowered)."""
    if check is None:
        return {
            "anchors": "unverified",
            "anchor_rho": None,
            "anchor_checked_at": None,
            "anchor_folder": None,
            "anchor_lock": None,
            "anchor_threshold": None,
            "anchor_lowered": False,
        }
    checked = check.checked_at
    if isinstance(checked, str):  # SQLite hands timestamps back as text
        checked = datetime.fromisoformat(checked)
    threshold = check.threshold
    return {
        "anchors": "verified" if check.passed else "failed",
        "anchor_rho": check.rho,
        "anchor_checked_at": checked,
        "anchor_folder": check.folder or None,
        "anchor_lock": check.lock_sha256 or None,
        "anchor_threshold": threshold,
        "anchor_lowered": threshold is not None and threshold < ANCHOR_THRESHOLD,
    }


def _anchor_checks(conn: Connection, judge_key: str, hashes: list[str]) -> dict[str, Any]:
    found = {h: anchor_check(conn, judge_key, h) for h in hashes}
    return {h: check for h, check in found.items() if check is not None}


def current_anchors(conn: Connection, sweep_id: str, answers: AnswerQuality) -> AnswerQuality:
    """`answers` with each judge's anchor verdict as the latest gate run gives it now: a card
    built before a later `farm anchors verify` must not keep saying what was true then."""
    chosen = next(
        (p for p in scoring_passes(conn, sweep_id) if p.scoring_id == answers.scoring_id), None
    )
    if chosen is None or not answers.judges:
        return answers
    judge = JudgeSettings.model_validate(json.loads(chosen.config_json)["judge"])
    if judge.model is None:
        return answers
    checks = _anchor_checks(conn, judge.model.key(), [j.rubric_hash for j in answers.judges])
    judges = [j.model_copy(update=_verdict(checks.get(j.rubric_hash))) for j in answers.judges]
    return answers.model_copy(
        update={"judges": judges, "verified": all(j.anchors == "verified" for j in judges)}
    )


def _prompt_of(row: AnswerRow) -> str:
    """The prompt config of a row, without its tool set."""
    return row.prompt.removesuffix(f"+{row.toolset}") if row.toolset else row.prompt


def _ranking(rows: list[AnswerRow]) -> list[Ranked]:
    """Configurations by fairness (scenario-level means), each against the baseline of the
    same model and prompt config."""
    baselines = {(r.model, _prompt_of(r)): r.fairness for r in rows if r.baseline}
    ranked = []
    for r in rows:
        base = baselines.get((r.model, _prompt_of(r)))
        gap = None if base is None or r.fairness is None or r.baseline else r.fairness - base
        ranked.append(
            Ranked(
                model=r.model,
                prompt=r.prompt,
                toolset=r.toolset,
                baseline=r.baseline,
                fairness=r.fairness,
                adoption=r.adoption,
                vs_baseline=gap,
            )
        )
    return sorted(ranked, key=lambda x: -(x.fairness if x.fairness is not None else -math.inf))


def answer_quality(
    conn: Connection, sweep_id: str, scoring: str | None = None
) -> AnswerQuality | None:
    """The answer-quality section from one scoring pass (default: the newest with scores)."""
    passes = scoring_passes(conn, sweep_id)
    chosen = next((p for p in passes if scoring in (None, p.scoring_id)), None)
    if chosen is None:
        return None
    config = json.loads(chosen.config_json)
    judge = JudgeSettings.model_validate(config["judge"])
    anchors: dict[str, Any] = {}
    if judge.model is not None:
        hashes = rubric_hashes(conn, sweep_id, chosen.scoring_id)
        anchors = _anchor_checks(conn, judge.model.key(), hashes)
    scores = answer_scores(conn, sweep_id, chosen.scoring_id)
    groups: dict[tuple[str, str, str, bool], list[Any]] = defaultdict(list)
    for r in scores:
        groups[(r.model_id, r.config, r.toolset, bool(r.baseline))].append(r)
    rows: list[AnswerRow] = []
    for key, members in sorted(groups.items()):
        rows.append(_row("config", key, "", members))
        by_scenario: dict[str, list[Any]] = defaultdict(list)
        for r in members:
            by_scenario[r.scenario_id].append(r)
        rows += [_row("scenario", key, s, m) for s, m in sorted(by_scenario.items())]
    judges = _variance(conn, sweep_id, chosen.scoring_id, judge, anchors)
    config_rows = [r for r in rows if r.dimension == "config"]
    return AnswerQuality(
        scoring_id=chosen.scoring_id,
        kind=chosen.kind,
        grader_version=str(config.get("grader", "")),
        judge=judge.model.id if judge.model else "",
        weights=judge.weights.model_dump(),
        rows=rows,
        judges=judges,
        ranking=_ranking(config_rows),
        verified=bool(judges) and all(j.anchors == "verified" for j in judges),
    )
