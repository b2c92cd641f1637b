"""How much of a judge's score is the judge: variance across duplicate judge runs.

Every transcript (a trial) is judged R ≥ 2 times; each run scores every rubric criterion on
0..1, and criteria are grouped into steps. `judge_variance` reads that long table and reports
the judge's standard deviation at three levels — criterion, step, scenario — with ICC(1) and
the smallest scenario-level difference the runs can resolve. Criterion-level noise is large
(a criterion is one reading), so criterion differences are commentary; ranking uses
scenario-level means only (`compare_means`). `spearman` is the drift guard's correlation with
gold scores.

Pure numpy: the scheduler never needs scipy at run time (the tests check against it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mcp_farm.scheduler.statistics.power import detectable
from mcp_farm.scheduler.statistics.rates import (
    student_p,
    student_quantile,
)

FIELDS = ("config", "scenario", "trial", "run", "step", "criterion", "score")
"""The columns of a judgement table (a run's score is normalised to 0..1; NaN unreadable)."""

DifferenceKind = Literal["noise", "finding"]

Ints = NDArray[np.intp]
Floats = NDArray[np.float64]


@dataclass(frozen=True)
class Variance:
    """The judge's run-to-run spread. A sigma is None when no item has two readable runs."""

    sigma_criterion: float | None
    """Pooled SD across runs of one criterion of one trial: √(mean over items of s²)."""
    sigma_step: float | None
    """The same for a step of a trial; a run's value is the mean of the step's criteria."""
    sigma_scenario: float | None
    """The same for a (config, scenario); a run's value is the mean over its trials and
    criteria in that run."""
    icc1: float | None
    """ICC(1) of trial-level scores (a run's value: the mean over criteria): the share of
    variance that is the trials and not the judge (negative when the judge's spread exceeds
    the trials'). None with fewer than 2 trials of ≥ 2 readable runs, or no variance at all."""
    resolution: float | None
    """Per scenario: the smallest resolvable difference of two scenario-level means,
    t·√2·sigma_scenario/√R with t the two-sided 95% critical value on 2R − 2 degrees of freedom
    (the test estimates σ from the two means' runs). A scenario mean over R runs carries judge
    error σ/√R; two independent ones differ with error √2·σ/√R. None below R = 2."""
    resolution_80: float | None
    """Per scenario: the difference that t-test finds 80% of the time (noncentral t). The
    figure to plan judge runs by."""
    trials: int
    runs: int
    """R: the most common number of readable runs per trial (the smaller on a tie)."""
    items_criterion: int
    """(trial, criterion) items pooled into sigma_criterion (those with ≥ 2 readable runs)."""
    unreadable: int
    """Scores that are NaN (or otherwise not finite): the judge's reply could not be read."""
    noise_floor: float
    per_criterion: dict[str, float]
    """Criterion → its pooled SD over trials (criteria without a pooled item left out)."""


@dataclass(frozen=True)
class MeanDifference:
    """B's scenario-level mean minus A's, paired over the scenarios both arms have."""

    n: int
    a_mean: float
    b_mean: float
    diff: float
    low: float
    high: float
    """The 95% interval, Student t on n-1 df; infinite with fewer than 2 scenarios."""
    p: float
    """Two-sided paired-t p-value; NaN with fewer than 2 scenarios."""


def _columns(records: Iterable[Mapping[str, Any]] | Mapping[str, ArrayLike]) -> dict[str, Any]:
    """The table as numpy columns (keys as str, run as int, score as float with NaN)."""
    if isinstance(records, Mapping):
        raw = {name: list(np.asarray(records[name]).ravel()) for name in FIELDS}
    else:
        rows = list(records)
        raw = {name: [row[name] for row in rows] for name in FIELDS}
    if len({len(column) for column in raw.values()}) > 1:
        raise ValueError("judgement columns differ in length")
    cols: dict[str, Any] = {name: np.array([str(v) for v in raw[name]]) for name in FIELDS[:6]}
    cols["run"] = np.array([int(v) for v in raw["run"]], dtype=np.intp)
    cols["score"] = np.array([math.nan if v is None else v for v in raw["score"]], dtype=float)
    return cols


def _codes(*columns: NDArray[Any]) -> Ints:
    """One integer group id per row for the rows' combined keys."""
    if len(columns[0]) == 0:
        return np.zeros(0, dtype=np.intp)
    parts = [np.unique(column, return_inverse=True)[1].ravel() for column in columns]
    return np.unique(np.stack(parts, axis=1), axis=0, return_inverse=True)[1].ravel()


def _cells(item: Ints, run: Ints, score: Floats) -> tuple[Ints, Floats]:
    """Each (item, run) cell's mean of the readable scores under it, with the cell's item."""
    cell = _codes(item, run)
    n = int(cell.max()) + 1 if cell.size else 0
    values = np.bincount(cell, weights=score, minlength=n) / np.bincount(cell, minlength=n)
    owner = np.zeros(n, dtype=np.intp)
    owner[cell] = item
    return owner, values


def _within(owner: Ints, values: Floats) -> tuple[Ints, Floats]:
    """The items with ≥ 2 cells and each one's sample variance (ddof=1) across its cells."""
    n = int(owner.max()) + 1 if owner.size else 0
    count = np.bincount(owner, minlength=n)
    mean = np.bincount(owner, weights=values, minlength=n) / np.maximum(count, 1)
    squares = np.bincount(owner, weights=(values - mean[owner]) ** 2, minlength=n)
    kept = np.flatnonzero(count >= 2)
    return kept, squares[kept] / (count[kept] - 1)


def _pooled(variances: Floats) -> float | None:
    """√(mean within-item variance); None without an item."""
    return math.sqrt(float(variances.mean())) if variances.size else None


def _icc1(owner: Ints, values: Floats) -> float | None:
    """ICC(1) by one-way ANOVA over items with ≥ 2 cells; k0 = (N - Σnᵢ²/N)/(a-1) when the
    items' run counts differ (k0 = k when all have k)."""
    count = np.bincount(owner) if owner.size else np.zeros(0, dtype=np.intp)
    keep = count[owner] >= 2
    owner, values = owner[keep], values[keep]
    count = count[count >= 2]
    a, total = count.size, int(count.sum())
    if a < 2:
        return None
    _, owner = np.unique(owner, return_inverse=True)
    mean = np.bincount(owner, weights=values) / count
    msb = float((count * (mean - values.mean()) ** 2).sum()) / (a - 1)
    msw = float(((values - mean[owner]) ** 2).sum()) / (total - a)
    k0 = (total - float((count**2).sum()) / total) / (a - 1)
    denom = msb + (k0 - 1) * msw
    # Identical readings everywhere leave only rounding error: nothing to apportion.
    return (msb - msw) / denom if denom > 1e-20 else None


def _mode(counts: Ints) -> int:
    """The most common value (the smallest of the most common); 0 for none."""
    return int(np.argmax(np.bincount(counts))) if counts.size else 0


def judge_variance(
    records: Iterable[Mapping[str, Any]] | Mapping[str, ArrayLike], noise_floor: float = 0.05
) -> Variance:
    """The judge's run-to-run spread at criterion, step and scenario level, and ICC(1).

    `records` is a list of judgements (mappings with the FIELDS) or a mapping of those columns.
    A trial is keyed by (config, scenario, trial); an item is pooled when it has ≥ 2 readable
    runs, and its runs' values are means of the readable scores under them.
    """
    cols = _columns(records)
    trial = _codes(cols["config"], cols["scenario"], cols["trial"])
    readable = np.isfinite(cols["score"])
    run, score = cols["run"][readable], cols["score"][readable]

    def at(item: Ints) -> tuple[Ints, Floats]:
        return _cells(item[readable], run, score)

    criterion = _codes(trial, cols["criterion"])
    kept, variances = _within(*at(criterion))
    names = np.zeros(int(criterion.max()) + 1 if criterion.size else 0, dtype=object)
    names[criterion] = cols["criterion"]
    per_criterion = {
        str(name): math.sqrt(float(variances[names[kept] == name].mean()))
        for name in sorted(set(names[kept]))
    }
    sigma_step = _pooled(_within(*at(_codes(trial, cols["step"])))[1])
    sigma_scenario = _pooled(_within(*at(_codes(cols["config"], cols["scenario"])))[1])
    trial_cells = at(trial)
    per_trial = np.bincount(trial_cells[0]) if trial_cells[0].size else trial_cells[0]
    runs = _mode(per_trial[per_trial > 0])
    resolution = resolution_80 = None
    if sigma_scenario is not None and runs >= 2:
        resolution = detectable(sigma_scenario, runs, 2 * runs - 2, 0.5)
        resolution_80 = detectable(sigma_scenario, runs, 2 * runs - 2, 0.8)
    return Variance(
        sigma_criterion=_pooled(variances),
        sigma_step=sigma_step,
        sigma_scenario=sigma_scenario,
        icc1=_icc1(*trial_cells),
        resolution=resolution,
        resolution_80=resolution_80,
        trials=int(trial.max()) + 1 if trial.size else 0,
        runs=runs,
        items_criterion=int(kept.size),
        unreadable=int((~readable).sum()),
        noise_floor=noise_floor,
        per_criterion=per_criterion,
    )


def _average_ranks(values: Floats) -> Floats:
    """Ranks 1..n, tied values sharing the mean of the ranks they span."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)
    return (last - (counts - 1) / 2.0)[inverse.ravel()]


def spearman(x: ArrayLike, y: ArrayLike) -> float:
    """Spearman's ρ with average ranks for ties; NaN for < 2 points, a constant side or NaN."""
    xs, ys = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if xs.size != ys.size:
        raise ValueError(f"spearman needs paired values, got {xs.size} and {ys.size}")
    if xs.size < 2 or np.isnan(xs).any() or np.isnan(ys).any():
        return math.nan
    rx, ry = _average_ranks(xs), _average_ranks(ys)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = math.sqrt(float((rx * rx).sum() * (ry * ry).sum()))
    if denom == 0:
        return math.nan
    return max(-1.0, min(1.0, float((rx * ry).sum()) / denom))


def classify_difference(diff: float, noise_floor: float) -> DifferenceKind:
    """A criterion-level difference inside the judge's noise floor is noise (as is NaN)."""
    return "finding" if abs(diff) >= noise_floor else "noise"


def mean_interval(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    """The mean of `values` and its 95% Student-t interval; no interval below two values."""
    data = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    if data.size == 0:
        return None, None, None
    centre = float(data.mean())
    if data.size < 2:
        return centre, None, None
    half = student_quantile(data.size - 1) * float(data.std(ddof=1)) / math.sqrt(data.size)
    return centre, centre - half, centre + half


def compare_means(a: Mapping[str, float], b: Mapping[str, float]) -> MeanDifference:
    """Paired t comparison of two arms' scenario-level mean scores (keys are scenarios).

    Only scenarios both arms have, with finite means on both sides, are paired. With no spread
    in the differences the interval is the point and p is 1 (no difference) or 0.
    """
    keys = sorted(k for k in set(a) & set(b) if math.isfinite(a[k]) and math.isfinite(b[k]))
    n = len(keys)
    if n == 0:
        return MeanDifference(0, math.nan, math.nan, math.nan, -math.inf, math.inf, math.nan)
    xa = np.array([a[k] for k in keys], dtype=float)
    xb = np.array([b[k] for k in keys], dtype=float)
    d = xb - xa
    diff = float(d.mean())
    a_mean, b_mean = float(xa.mean()), float(xb.mean())
    if n < 2:
        return MeanDifference(n, a_mean, b_mean, diff, -math.inf, math.inf, math.nan)
    se = float(d.std(ddof=1)) / math.sqrt(n)
    if se == 0:
        return MeanDifference(n, a_mean, b_mean, diff, diff, diff, 1.0 if diff == 0 else 0.0)
    half = student_quantile(n - 1) * se
    p = student_p(diff / se, n - 1)
    return MeanDifference(n, a_mean, b_mean, diff, diff - half, diff + half, p)
