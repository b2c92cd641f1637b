"""Power of the two-sided t-test between two means (95% unless another α is given), with σ
estimated from the readings themselves (Student's t, noncentral under a true difference), and
what a judge plan needs; `farm users plan` builds on the same functions (user_power.py).

Judge noise only: two means of N readings each, every reading off by the judge's σ. The test
estimates σ from the readings, so a plan by the normal distribution (σ known) promises more power
than it delivers at small N: at N = 3 runs a z-plan's 80% is about 56%. Pure numpy: the scheduler
never needs scipy at run time (the tests check these against scipy and statsmodels).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mcp_farm.scheduler.statistics.rates import student_quantile

Floats = NDArray[np.float64]
ALPHA = 0.05
GRID = 4001
"""Points of the log-scale trapezoid over the χ² of the variance estimate (spectrally accurate:
the integrand is smooth and falls off fast at both ends)."""
MOST = 10**7
"""Runs or scenarios past which a plan says the difference cannot be reached."""

_erfc = np.vectorize(math.erfc, otypes=[float])


def _upper_normal(x: Floats) -> Floats:
    """P(Z > x) for a standard normal Z, elementwise, exact in the far tail."""
    found: Floats = 0.5 * _erfc(x / math.sqrt(2))
    return found


@functools.lru_cache(maxsize=4096)
def critical(df: float, alpha: float = ALPHA) -> float:
    """The two-sided critical value of Student's t at level `alpha` on `df` degrees of
    freedom."""
    return student_quantile(df, alpha)


def t_power(effect: float, n: float, df: float, alpha: float = ALPHA) -> float:
    """The chance that a two-sided t-test at level `alpha` on two means of `n` readings each, σ
    estimated on `df` degrees of freedom, finds a true difference of `effect`·σ: P(|T| > t_crit)
    for T noncentral t with noncentrality `effect`·√(n/2). Zero without degrees of freedom."""
    if df <= 0 or n <= 0:
        return 0.0
    ncp = abs(effect) * math.sqrt(n / 2)
    t = critical(df, alpha)
    # T = (Z + ncp) / √(V/df), V ~ χ²(df): integrate P(|T| > t | V) over V = e^w.
    k = df / 2
    low = math.log(df) - 70 / df - 12 * math.sqrt(2 / df)
    w = np.linspace(low, math.log(df + 40 * math.sqrt(2 * df) + 60), GRID)
    v = np.exp(w)
    density = np.exp(k * w - v / 2 - k * math.log(2) - math.lgamma(k))
    s = np.sqrt(v / df)
    tails = _upper_normal(t * s - ncp) + _upper_normal(t * s + ncp)
    y = density * tails
    return float(min(1.0, ((y[1:] + y[:-1]) / 2 * np.diff(w)).sum()))


def detectable(sigma: float, n: float, df: float, power: float, alpha: float = ALPHA) -> float:
    """The difference of two means of `n` readings each (SD `sigma`, estimated on `df` degrees
    of freedom) that the test at level `alpha` finds with probability `power`; at power 0.5,
    the threshold itself, t_crit·√2·σ/√n. Infinite without degrees of freedom."""
    if df <= 0 or n <= 0:
        return math.inf
    if power == 0.5:
        return critical(df, alpha) * math.sqrt(2) * sigma / math.sqrt(n)
    low, high = 0.0, 1.0
    while t_power(high, n, df, alpha) < power:
        low, high = high, high * 2
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if t_power(mid, n, df, alpha) < power else (low, mid)
    return high * sigma


def reaches(
    sigma: float, difference: float, n: float, df: float, power: float, alpha: float = ALPHA
) -> bool:
    """Whether two means of `n` readings each (SD `sigma`, estimated on `df` degrees of
    freedom) resolve `difference` at `power` (0.5: the threshold itself) and level `alpha`."""
    if power == 0.5:
        return detectable(sigma, n, df, power, alpha) <= difference
    return t_power(difference / sigma, n, df, alpha) >= power


def fewest(ok: Callable[[int], bool], start: int) -> int | None:
    """The smallest m ≥ `start` with `ok(m)` (monotone), by doubling then bisection; None
    past MOST."""
    if ok(start):
        return start
    low, high = start, start * 2
    while not ok(high):
        if high > MOST:
            return None
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if ok(mid) else (mid, high)
    return high


def runs_needed(sigma: float, difference: float, power: float) -> int | None:
    """Judge runs per mean for one scenario's mean to resolve `difference` (σ estimated from
    the 2N − 2 degrees of freedom of the two means' runs), at least 2; None when out of reach.
    The same as statsmodels' two-sample t-test power, rounded up."""
    if sigma <= 0:
        return 2
    return fewest(lambda n: reaches(sigma, difference, n, 2 * n - 2, power), 2)


def config_df(runs: int, scenarios: int) -> int:
    """Degrees of freedom of σ behind two configuration means over `scenarios` scenarios of
    `runs` judge runs each: the spread within each scenario's runs, 2·S·(R − 1)."""
    return 2 * scenarios * (runs - 1)


@dataclass(frozen=True)
class Plan:
    """What resolving a difference of configuration means takes, for one judge at one power
    (0.5: the 95% threshold itself, where a true difference that size is found about half the
    time). None where the difference is out of reach (or the runs give σ no degrees of
    freedom)."""

    power: float
    detectable_now: float | None
    """Per configuration: the difference two configuration means resolve now, each over the
    sweep's S scenarios of R judge runs (σ on 2·S·(R − 1) degrees of freedom)."""
    runs_one_scenario: int | None
    """Per scenario: judge runs per transcript for one scenario's mean alone to resolve it."""
    runs_per_transcript: int | None
    """Per configuration: judge runs per transcript for a configuration's mean over the sweep's
    S scenarios (at least 2, so the judge's variance stays measurable)."""
    scenarios: int | None
    """Per configuration: scenarios a configuration's mean needs at the sweep's R runs."""


def plan(sigma: float, runs: int, scenarios: int, difference: float, power: float) -> Plan:
    """Judge runs and scenarios for a difference of configuration means, from the judge's
    scenario-level σ: a configuration's mean over S scenarios of R runs averages R·S readings,
    and the test estimates σ from the spread within each scenario's runs."""

    def over(r: int, s: int) -> bool:
        return reaches(sigma, difference, r * s, config_df(r, s), power)

    now = detectable(sigma, runs * scenarios, config_df(runs, scenarios), power)
    return Plan(
        power=power,
        detectable_now=now if math.isfinite(now) else None,
        runs_one_scenario=runs_needed(sigma, difference, power),
        runs_per_transcript=fewest(lambda r: over(r, scenarios), 2),
        scenarios=fewest(lambda s: over(runs, s), 1) if runs >= 2 else None,
    )
