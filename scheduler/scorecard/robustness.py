"""Curves of pass rate against tool count, from the config rows of a sweep's tool-list levels.

Each level is a configuration of its own (prompt id + `@tools=…,desc=…,names=…`), so its rates
are the config rows'. Here the levels of one model × prompt × descriptions × names are put in
order and a logistic curve is fitted to them: log-odds of a pass = a + b·log2(1 + tool count),
by Newton's method on the binomial likelihood, with half a pass and half a failure added at
each level so a level where every trial passed (or failed) keeps the fit finite.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mcp_farm.scheduler.scorecard.queries.provenance import level_trials
from mcp_farm.scheduler.statistics.rates import Z95, wilson
from mcp_farm.schema import ListPosition
from mcp_farm.schema.scorecard import Curve, LevelPoint, PositionDecile, Row
from mcp_farm.schema.specs import ToolListLevel, parse_label

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

DEFAULT_THRESHOLD = 0.5
NEWTON_STEPS = 50


def threshold_of(spec_json: str | None) -> float:
    """The sweep's `tool_list.threshold` from its recorded spec; the default otherwise."""
    if not spec_json:
        return DEFAULT_THRESHOLD
    block: Any = json.loads(spec_json).get("tool_list") or {}
    return float(block.get("threshold", DEFAULT_THRESHOLD))


def curves(
    rows: list[Row], threshold: float, tokens: Mapping[tuple[str, str], float] | None = None
) -> list[Curve]:
    """One curve per model × prompt × descriptions × names with two or more tool counts, and
    one (without a slope) per such group measured at a single count. `tokens`: the mean prompt
    tokens per trial of each (model, level label) that recorded any."""
    groups: dict[tuple[str, str, str, str], list[tuple[ToolListLevel, Row]]] = defaultdict(list)
    for row in rows:
        if row.dimension != "config":
            continue
        parsed = parse_label(row.prompt)
        if parsed is None:
            continue
        prompt, level = parsed
        groups[(row.model, prompt, level.descriptions, level.names)].append((level, row))
    return [
        _curve(key, sorted(levels, key=lambda lr: lr[0].tool_count), threshold, tokens or {})
        for key, levels in sorted(groups.items())
    ]


def _curve(
    key: tuple[str, str, str, str],
    levels: list[tuple[ToolListLevel, Row]],
    threshold: float,
    tokens: Mapping[tuple[str, str], float],
) -> Curve:
    model, prompt, descriptions, names = key
    counts = [level.tool_count for level, _row in levels]
    graded = [(row.n, row.passes) for _level, row in levels]
    fit = _fit(counts, graded) if len(set(counts)) > 1 else None
    points = [
        _point(level, row, fit).model_copy(
            update={"prompt_tokens": tokens.get((model, row.prompt))}
        )
        for level, row in levels
    ]
    below = next((p.tool_count for p in points if p.rate is not None and p.rate < threshold), None)
    slope = low = high = crossing = None
    if fit is not None:
        (a, b), cov = fit
        se = math.sqrt(max(cov[1][1], 0.0))
        slope, low, high = b, b - Z95 * se, b + Z95 * se
        crossing = _crossing(a, b, threshold, max(counts))
    return Curve(
        model=model,
        prompt=prompt,
        descriptions=descriptions,
        names=names,
        points=points,
        slope=slope,
        slope_low=low,
        slope_high=high,
        threshold=threshold,
        below_at=below,
        crossing=crossing,
        tokens_per_tool=tokens_per_tool(points),
    )


def tokens_per_tool(points: list[LevelPoint]) -> float | None:
    """The least-squares slope of mean prompt tokens against tool count over the levels that
    recorded tokens; None with fewer than two such tool counts."""
    known = [(p.tool_count, p.prompt_tokens) for p in points if p.prompt_tokens is not None]
    if len({count for count, _tokens in known}) < 2:
        return None
    xs = np.array([float(count) for count, _tokens in known])
    ys = np.array([float(tokens or 0.0) for _count, tokens in known])
    centred = xs - xs.mean()
    return float((centred * (ys - ys.mean())).sum() / (centred * centred).sum())


def _point(
    level: ToolListLevel, row: Row, fit: tuple[tuple[float, float], list[list[float]]] | None
) -> LevelPoint:
    wrong = row.outcomes.get("wrong_tool", 0)
    wrong_low, wrong_high = wilson(wrong, row.n)
    fitted = fitted_low = fitted_high = None
    if fit is not None:
        (a, b), cov = fit
        x = _x(level.tool_count)
        eta = a + b * x
        sd = math.sqrt(max(cov[0][0] + 2 * x * cov[0][1] + x * x * cov[1][1], 0.0))
        fitted, fitted_low, fitted_high = (
            _expit(eta),
            _expit(eta - Z95 * sd),
            _expit(eta + Z95 * sd),
        )
    return LevelPoint(
        tool_count=level.tool_count,
        label=row.prompt,
        n=row.n,
        passes=row.passes,
        rate=row.rate,
        low=row.low,
        high=row.high,
        first_rate=row.first_rate,
        wrong_tool=wrong,
        context_overflow=row.outcomes.get("context_overflow", 0),
        wrong_rate=wrong / row.n if row.n else None,
        wrong_low=wrong_low,
        wrong_high=wrong_high,
        fitted=fitted,
        fitted_low=fitted_low,
        fitted_high=fitted_high,
    )


def _x(count: int) -> float:
    return math.log2(1 + count)


def _expit(eta: float) -> float:
    return 1.0 / (1.0 + math.exp(-eta)) if eta > -700 else 0.0


def _fit(
    counts: list[int], graded: list[tuple[int, int]]
) -> tuple[tuple[float, float], list[list[float]]] | None:
    """(a, b) and their covariance, or None when no trial was graded."""
    n = np.array([g[0] + 1.0 for g in graded])  # + half a pass and half a failure
    k = np.array([g[1] + 0.5 for g in graded])
    if float(n.sum()) <= len(graded):
        return None
    x = np.array([_x(c) for c in counts])
    design = np.column_stack([np.ones_like(x), x])
    beta = np.zeros(2)
    info = np.eye(2)
    for _step in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-(design @ beta)))
        weights = n * p * (1 - p)
        info = design.T @ (design * weights[:, None])
        step = np.linalg.solve(info, design.T @ (k - n * p))
        beta = beta + step
        if float(np.abs(step).max()) < 1e-10:
            break
    cov = np.linalg.inv(info)
    return (float(beta[0]), float(beta[1])), cov.tolist()


def _crossing(a: float, b: float, threshold: float, most: int) -> float | None:
    """The tool count where a + b·log2(1 + count) = logit(threshold), within 0..most."""
    if b >= 0:
        return None
    x = (math.log(threshold / (1 - threshold)) - a) / b if threshold < 1 else math.inf
    count = 2**x - 1 if x < 64 else math.inf
    return count if 0 <= count <= most else None


def level_facts(
    conn: Connection, sweep_id: str, skip_left: bool
) -> tuple[list[PositionDecile], dict[tuple[str, str], float]]:
    """From one read of the tool-list levels' graded trials: the pass rate by list position
    (`position_deciles`) and the mean prompt tokens per (model, level label) (`mean_tokens`)."""
    trials = level_trials(conn, sweep_id, skip_left)
    return position_deciles(trials), mean_tokens(trials)


def mean_tokens(trials: Sequence[Any]) -> dict[tuple[str, str], float]:
    """Per (model, level label), the mean prompt tokens of its graded trials that recorded
    any (a trial's model calls together); levels where none did are left out."""
    sums: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in trials:
        if row.tokens_prompt:
            found = sums[(str(row.model_id), str(row.config))]
            found[0] += int(row.tokens_prompt)
            found[1] += 1
    return {key: total / n for key, (total, n) in sums.items()}


def position_deciles(trials: Sequence[Any]) -> list[PositionDecile]:
    """Per curve (model × prompt × descriptions × names) and decile of the list, the pass rate
    of its graded trials with distractors whose first expected tool sat in that decile."""
    tally: dict[tuple[str, str, str, str, int], list[int]] = defaultdict(lambda: [0, 0])
    for row in trials:
        parsed = parse_label(str(row.config))
        recorded = json.loads(row.provenance_json).get("tool_positions") or []
        if parsed is None or parsed[1].tool_count == 0 or not recorded:
            continue
        decile = ListPosition.model_validate(recorded[0]).decile()
        if decile is None:
            continue
        prompt, level = parsed
        counts = tally[(str(row.model_id), prompt, level.descriptions, level.names, decile)]
        counts[0] += 1
        counts[1] += 1 if row.outcome == "pass" else 0
    return [
        PositionDecile(
            model=model,
            prompt=prompt,
            descriptions=descriptions,
            names=names,
            decile=decile,
            n=n,
            passes=passes,
            rate=passes / n,
            low=wilson(passes, n)[0],
            high=wilson(passes, n)[1],
        )
        for (model, prompt, descriptions, names, decile), (n, passes) in sorted(tally.items())
    ]
