"""The statistics behind scorecards and comparisons, small and checked against scipy/statsmodels.

- `wilson`: the Wilson score interval of a pass rate.
- `pass_hat_k` / `pass_at_k`: the unbiased estimators of "all k repetitions pass" and "at least
  one of k passes" from n repetitions with c passes.
- `compare_rates`: the difference of two pass rates with an interval and p-value that treat
  trials of one scenario as correlated: a cluster-robust (CR1) standard error — the same number
  as an OLS of pass on arm with errors clustered by scenario — with Student t on G-1 degrees of
  freedom; with fewer than MIN_CLUSTERS scenarios, the Miettinen–Nurminen score test on the
  pooled counts and the interval that inverts it (`score_difference`). Either way the interval
  is the test's own: at level 1 − alpha it excludes 0 exactly when p < alpha, and it is never
  clipped.
- `holm`: Holm's step-down adjustment, so many compared cells do not make noise significant.
- `first_try_rate`: passes with no missed call over graded trials, where every trial has a record.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

Z95 = 1.959963984540054


def first_try_rate(graded: int, first_tries: int, recorded: int) -> float | None:
    """First-try passes over graded trials; None when there are none, or when some graded
    trial has no first-try record (recorded before first tries were kept): unknown, not 0."""
    return first_tries / graded if graded and recorded == graded else None


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
    if c < k:
        # Some factor (c - i) is zero: said at once rather than after c terms (a large sweep
        # has hundreds of repetitions, so k is in the hundreds, for thousands of rows).
        return 0.0
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


def _beta_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz method)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return result


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    # The continued fraction converges on one side of (a+1)/(a+b+2); evaluate that side once
    # (swapping and re-testing would recurse without end when x sits on the switch point).
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def student_p(t: float, df: float) -> float:
    """Two-sided p-value of a Student-t statistic with `df` degrees of freedom."""
    if math.isnan(t):
        return 1.0
    if math.isinf(t):
        return 0.0
    return incomplete_beta(df / 2, 0.5, df / (df + t * t))


def normal_p(z: float) -> float:
    """Two-sided p-value of a standard-normal statistic."""
    if math.isnan(z):
        return 1.0
    return math.erfc(abs(z) / math.sqrt(2))


def normal_quantile(p: float) -> float:
    """The z with two-sided p-value `p` (by bisection; Z95 at 0.05)."""
    low, high = 0.0, 40.0
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if normal_p(mid) > p else (low, mid)
    return (low + high) / 2


MIN_CLUSTERS = 5
"""Below this many scenarios a cluster-robust error is unreliable; counts are pooled instead."""


@dataclass(frozen=True)
class Difference:
    """B's pass rate minus A's, with an interval (95% unless another level was asked for) and a
    two-sided p-value."""

    a_n: int
    a_rate: float
    b_n: int
    b_rate: float
    diff: float
    low: float
    high: float
    p: float
    clusters: int
    method: str
    """`clustered` (CR1 error, Student t with G-1 df) or `score` (the Miettinen–Nurminen score
    test on pooled counts and the interval that inverts it) when there are fewer than
    MIN_CLUSTERS scenarios."""
    alpha: float = 0.05
    """The interval's level is 1 − alpha."""


def clustered_se(a: Mapping[str, tuple[int, int]], b: Mapping[str, tuple[int, int]]) -> float:
    """Cluster-robust (CR1) standard error of B's pass rate minus A's.

    `a` and `b` map a cluster (scenario) to (trials, passes) in that arm; a scenario in both
    arms is one cluster, so the comparison is paired on it. With residuals e = pass - arm rate
    the variance is G/(G-1) · (N-1)/(N-2) · Σ_g (Σe_gB/n_B - Σe_gA/n_A)²: the same number as an
    OLS of pass on arm with errors clustered by scenario.
    """
    a_n, b_n = sum(n for n, _ in a.values()), sum(n for n, _ in b.values())
    clusters = set(a) | set(b)
    g, total = len(clusters), a_n + b_n
    if a_n == 0 or b_n == 0 or g < 2 or total < 3:
        return math.nan
    a_rate = sum(c for _, c in a.values()) / a_n
    b_rate = sum(c for _, c in b.values()) / b_n
    meat = 0.0
    for key in clusters:
        an, ac = a.get(key, (0, 0))
        bn, bc = b.get(key, (0, 0))
        score = (bc - bn * b_rate) / b_n - (ac - an * a_rate) / a_n
        meat += score * score
    return math.sqrt(g / (g - 1) * (total - 1) / (total - 2) * meat)


def student_quantile(df: float, p: float = 0.05) -> float:
    """The t with two-sided p-value `p` (by bisection)."""
    low, high = 0.0, 1e3
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if student_p(mid, df) > p else (low, mid)
    return (low + high) / 2


def compare_rates(
    a: Mapping[str, tuple[int, int]], b: Mapping[str, tuple[int, int]], alpha: float = 0.05
) -> Difference:
    """Difference of pass rates between two arms whose trials are grouped by scenario, with a
    1 − `alpha` interval."""
    a_n, a_c = sum(n for n, _ in a.values()), sum(c for _, c in a.values())
    b_n, b_c = sum(n for n, _ in b.values()), sum(c for _, c in b.values())
    g = len(set(a) | set(b))
    if a_n == 0 or b_n == 0:
        return Difference(a_n, math.nan, b_n, math.nan, math.nan, -1, 1, 1.0, g, "none", alpha)
    a_rate, b_rate = a_c / a_n, b_c / b_n
    diff = b_rate - a_rate
    se = clustered_se(a, b) if g >= MIN_CLUSTERS else math.nan
    if not math.isnan(se):
        p = (1.0 if diff == 0 else 0.0) if se == 0 else student_p(diff / se, g - 1)
        # The test's own interval, unclipped: t · se either side, so it excludes 0 exactly
        # when p < alpha (clipping it to ±1 would show an interval the test did not use).
        half = student_quantile(g - 1, alpha) * se
        return Difference(
            a_n, a_rate, b_n, b_rate, diff, diff - half, diff + half, p, g, "clustered", alpha
        )
    low, high, p = score_difference(a_n, a_c, b_n, b_c, alpha)
    return Difference(a_n, a_rate, b_n, b_rate, diff, low, high, p, g, "score", alpha)


def _restricted(x1: int, n1: int, x2: int, n2: int, delta: float) -> tuple[float, float]:
    """The maximum-likelihood rates (p1, p2) under p1 − p2 = delta (Miettinen and Nurminen's
    closed form: the root of a cubic)."""
    r1, r2 = x1 / n1, x2 / n2
    theta = n2 / n1
    a = 1 + theta
    b = -(1 + theta + r1 + theta * r2 + delta * (theta + 2))
    c = delta * delta + delta * (2 * r1 + theta + 1) + r1 + theta * r2
    d = -r1 * delta * (1 + delta)
    v = b**3 / (27 * a**3) - b * c / (6 * a * a) + d / (2 * a)
    u = math.copysign(math.sqrt(max(b * b / (9 * a * a) - c / (3 * a), 0.0)), v)
    ratio = 1.0 if u == 0 else max(-1.0, min(1.0, v / u**3))
    w = (math.pi + math.acos(ratio)) / 3
    p1 = min(1.0, max(0.0, 2 * u * math.cos(w) - b / (3 * a)))
    p2 = min(1.0, max(0.0, p1 - delta))
    return p1, p2


def score_z(x1: int, n1: int, x2: int, n2: int, delta: float) -> float:
    """Miettinen and Nurminen's score statistic for H0: p1 − p2 = delta (variance at the
    restricted estimates, times N / (N − 1)); ±inf when that variance is 0 and the observed
    difference is not delta, 0 when it is."""
    p1, p2 = _restricted(x1, n1, x2, n2, delta)
    total = n1 + n2
    variance = (p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2) * total / max(total - 1, 1)
    gap = x1 / n1 - x2 / n2 - delta
    if variance <= 0:
        return 0.0 if abs(gap) < 1e-12 else math.copysign(math.inf, gap)
    return gap / math.sqrt(variance)


def score_difference(
    a_n: int, a_passes: int, b_n: int, b_passes: int, alpha: float = 0.05
) -> tuple[float, float, float]:
    """B's rate minus A's on pooled counts: the 1 − `alpha` Miettinen–Nurminen score interval
    and the two-sided p-value of the same score test at a difference of 0. The interval is
    the set of differences the test does not reject, so it excludes 0 exactly when
    p < alpha."""
    z = normal_quantile(alpha)
    diff = b_passes / b_n - a_passes / a_n

    def kept(delta: float) -> bool:
        return abs(score_z(b_passes, b_n, a_passes, a_n, delta)) <= z

    def bound(inside: float, outside: float) -> float:
        # The statistic falls as delta rises, so the kept differences are one interval around
        # the observed one: bisect between a kept delta and the end of the range.
        if kept(outside):
            return outside
        for _ in range(100):
            middle = (inside + outside) / 2
            inside, outside = (middle, outside) if kept(middle) else (inside, middle)
        return (inside + outside) / 2

    low, high = bound(diff, -1.0), bound(diff, 1.0)
    p = normal_p(score_z(b_passes, b_n, a_passes, a_n, 0.0))
    return low, high, p


def corrected_alpha(p: float, p_adjusted: float, family: int, alpha: float = 0.05) -> float:
    """The level a multiple-comparison adjustment tested one cell at: alpha · p / p_adjusted
    (alpha / family when p is 0), so the cell's interval at this level excludes 0 exactly
    when its adjusted p-value is below alpha. Never below alpha / family (Bonferroni's)."""
    if p_adjusted <= 0 or p <= 0:
        return alpha / max(family, 1)
    return max(alpha / max(family, 1), min(alpha, alpha * p / p_adjusted))


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


EQUIVALENCE = 0.10
"""Two arms are `same` only when the whole 95% interval of their difference lies within ±10
points; a wider interval around a non-significant difference means too few trials to tell."""

MAX_RESOLVE_N = 10_000
"""The most trials a side `trials_to_resolve` looks at; past it, the answer is "more"."""


def resolved(diff: Difference, alpha: float = 0.05) -> bool:
    """Whether a difference says something: significant, or known to be within ±EQUIVALENCE."""
    return diff.p < alpha or (diff.low >= -EQUIVALENCE and diff.high <= EQUIVALENCE)


def trials_to_resolve(diff: Difference, alpha: float = 0.05) -> int | None:
    """About how many trials a side would resolve a difference at the rates seen: make it
    significant, or narrow its interval to ±EQUIVALENCE, at level `alpha` (a compared cell
    passes its corrected level, so the answer allows for the multiple-comparison adjustment).
    Pooled counts and the score test, no clustering, so it is a floor, not a promise; None past
    MAX_RESOLVE_N or when a side has no trials."""
    if diff.a_n == 0 or diff.b_n == 0:
        return None

    def settles(n: int) -> bool:
        a, b = round(diff.a_rate * n), round(diff.b_rate * n)
        return resolved(compare_rates({"": (n, a)}, {"": (n, b)}, alpha), alpha)

    low, high = max(diff.a_n, diff.b_n, 1), max(diff.a_n, diff.b_n, 2)
    while not settles(high):
        if high >= MAX_RESOLVE_N:
            return None
        low, high = high, min(2 * high, MAX_RESOLVE_N)
    while high - low > 1:  # rounding makes it nearly, not strictly, monotone: a close answer
        middle = (low + high) // 2
        low, high = (low, middle) if settles(middle) else (middle, high)
    return high
