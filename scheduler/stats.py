"""The statistics behind scorecards and comparisons, small and checked against scipy/statsmodels.

- `wilson`: the Wilson score interval of a pass rate.
- `pass_hat_k` / `pass_at_k`: the unbiased estimators of "all k repetitions pass" and "at least
  one of k passes" from n repetitions with c passes.
- `clustered_difference`: the difference of two pass rates with a standard error that treats
  trials of one scenario as correlated (a cluster-robust, CR1 sandwich estimator — the same
  number as an OLS of pass on arm with standard errors clustered by scenario).
- `holm`: Holm's step-down adjustment, so many compared cells do not make noise significant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

Z95 = 1.959963984540054


def wilson(passes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion; (0, 1) when there is no data."""
    if n == 0:
        return 0.0, 1.0
    p = passes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def percentiles(values: ArrayLike, qs: tuple[float, ...] = (50, 95, 99)) -> tuple[float, ...]:
    """Linear-interpolated percentiles (as PostgreSQL's percentile_cont); NaN for no sample."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return tuple(math.nan for _ in qs)
    return tuple(float(v) for v in np.percentile(arr, qs))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """P(k repetitions drawn without replacement from n, c of which passed, all pass)."""
    if not 0 < k <= n:
        return math.nan
    ratio = 1.0
    for i in range(k):
        ratio *= (c - i) / (n - i)
        if ratio <= 0:
            return 0.0
    return ratio


def pass_at_k(n: int, c: int, k: int) -> float:
    """P(at least one of k repetitions drawn from n, c of which passed, passes)."""
    if not 0 < k <= n:
        return math.nan
    return 1.0 - pass_hat_k(n, n - c, k)


def normal_p(z: float) -> float:
    """Two-sided p-value of a standard-normal statistic."""
    if math.isnan(z):
        return 1.0
    return math.erfc(abs(z) / math.sqrt(2))


@dataclass(frozen=True)
class Difference:
    """B's pass rate minus A's, with a cluster-robust 95% interval."""

    a_n: int
    a_rate: float
    b_n: int
    b_rate: float
    diff: float
    se: float
    low: float
    high: float
    p: float
    clusters: int


def clustered_difference(
    a: Mapping[str, tuple[int, int]], b: Mapping[str, tuple[int, int]]
) -> Difference:
    """Difference of pass rates between two arms, clustered by scenario.

    `a` and `b` map a cluster (scenario) to (trials, passes) in that arm. A scenario in both
    arms is one cluster (the comparison is paired on it). With residuals e = pass - arm rate,
    the CR1 variance of the difference is G/(G-1) · (N-1)/(N-2) · Σ_g (Σe_gB/n_B - Σe_gA/n_A)².
    """
    a_n = sum(n for n, _ in a.values())
    b_n = sum(n for n, _ in b.values())
    if a_n == 0 or b_n == 0:
        return Difference(a_n, math.nan, b_n, math.nan, math.nan, math.nan, -1, 1, 1.0, 0)
    a_rate = sum(c for _, c in a.values()) / a_n
    b_rate = sum(c for _, c in b.values()) / b_n
    diff = b_rate - a_rate
    clusters = sorted(set(a) | set(b))
    g = len(clusters)
    total = a_n + b_n
    meat = 0.0
    for key in clusters:
        an, ac = a.get(key, (0, 0))
        bn, bc = b.get(key, (0, 0))
        score = (bc - bn * b_rate) / b_n - (ac - an * a_rate) / a_n
        meat += score * score
    if g < 2 or total < 3:
        se = math.nan
    else:
        se = math.sqrt(g / (g - 1) * (total - 1) / (total - 2) * meat)
    if math.isnan(se):
        p = 1.0
    elif se == 0:
        p = 1.0 if diff == 0 else 0.0
    else:
        p = normal_p(diff / se)
    half = Z95 * se if not math.isnan(se) else math.inf
    return Difference(
        a_n, a_rate, b_n, b_rate, diff, se, max(-1.0, diff - half), min(1.0, diff + half), p, g
    )


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values (family-wise error control), in the input order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted
