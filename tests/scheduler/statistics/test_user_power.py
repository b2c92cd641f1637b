"""`farm users plan`'s statistics against independent computations: statsmodels' two-sample
t-test power at the plan's variance and degrees of freedom, and simulated comparisons of two
configurations whose agent, user and residual components are known, tested as a sweep's own
tables would be."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as sps
from scipy import optimize
from statsmodels.stats.power import TTestIndPower

from mcp_farm.scheduler.statistics.user_power import (
    design_power,
    detectable_difference,
    plan,
    table_df,
    table_variance,
)
from mcp_farm.scheduler.statistics.user_variance import Components


def parts(agent: float, user: float, rest: float) -> Components:
    return Components(agent, user, rest, (), 1, 0, 0)


def sm_power(variance: float, df: float, scenarios: int, difference: float, alpha: float) -> float:
    """statsmodels: two configuration means of S scenario rates each, each rate's variance
    `variance`, estimated on `df` degrees of freedom."""
    effect = difference / math.sqrt(variance)
    return float(TTestIndPower().power(effect, nobs1=scenarios, alpha=alpha, df=df))


def satterthwaite(p: Components, k: int, m: int, scenarios: int) -> float:
    """Written out here: (Σ E[MS])² / Σ E[MS]²/df over two configurations' 2·S tables."""
    tables = 2 * scenarios
    ms = [p.rest + m * p.agent, p.rest + k * p.user, p.rest]
    dfs = [tables * (k - 1), tables * (m - 1), tables * (k - 1) * (m - 1)]
    return (ms[0] + ms[1] - ms[2]) ** 2 / sum(v * v / d for v, d in zip(ms, dfs, strict=True))


@pytest.mark.parametrize("alpha", [0.05, 0.01])
@pytest.mark.parametrize(("k", "m", "scenarios"), [(2, 1, 1), (9, 1, 4), (3, 2, 1), (6, 4, 10)])
def test_a_designs_power_is_statsmodels_two_sample_t_test_power(
    k: int, m: int, scenarios: int, alpha: float
) -> None:
    p = parts(0.02, 0.05, 0.15)
    if m == 1:  # a new user every repetition: k independent trials per scenario
        variance, df = 0.22 / k, 2 * scenarios * (k - 1)
    else:
        variance = 0.02 / k + 0.05 / m + 0.15 / (k * m)
        df = satterthwaite(p, k, m, scenarios)
    assert table_variance(p, k, m) == pytest.approx(variance)
    assert table_df(p, k, m, scenarios) == pytest.approx(df)
    expected = sm_power(variance, df, scenarios, 0.2, alpha)
    assert design_power(p, k, m, scenarios, 0.2, alpha) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("power", [0.8, 0.9])
@pytest.mark.parametrize("scenarios", [1, 5, 20])
def test_each_design_takes_the_fewest_repetitions_statsmodels_says_reach_the_power(
    power: float, scenarios: int
) -> None:
    p, difference = parts(0.03, 0.02, 0.18), 0.15
    made = plan(p, scenarios, difference, power, seeds=4)
    assert [d.m for d in made.designs] == [1, 2, 3, 4]

    def reached(k: int, m: int) -> float:
        return sm_power(
            table_variance(p, k, m), table_df(p, k, m, scenarios), scenarios, difference, 0.05
        )

    for d in made.designs:
        if d.k is None:  # out of reach: even without agent noise the user's share is too wide
            limit = math.sqrt(0.02 / d.m)
            df = 2 * scenarios * (d.m - 1)
            assert sm_power(limit**2, df, scenarios, difference, 0.05) < power
            continue
        assert d.power == pytest.approx(reached(d.k, d.m), abs=1e-6)
        assert reached(d.k, d.m) >= power - 1e-9
        assert d.k == 2 or reached(d.k - 1, d.m) < power + 1e-9
        assert d.trials_per_scenario == d.k * d.m


def test_the_measured_design_gives_the_difference_it_finds_and_the_scenarios_it_needs() -> None:
    p = parts(0.0765, 0.1435, 0.0574)  # README's `steady` agent, 8 × 8 on one scenario
    made = plan(p, 1, 0.1, 0.8, now=(8, 8))
    found, needed = made.detectable_now, made.scenarios_now
    assert found is not None and needed is not None
    variance = table_variance(p, 8, 8)
    # statsmodels' power at the measured design's degrees of freedom, solved for the
    # difference (its solve_power takes no df).
    df = table_df(p, 8, 8, 1)
    solved = optimize.brentq(lambda d: sm_power(variance, df, 1, d, 0.05) - 0.8, 0.01, 2.0)
    assert found == pytest.approx(solved, rel=1e-5)
    assert detectable_difference(p, 8, 8, 1, 0.8) == found

    def enough(s: int) -> bool:
        return sm_power(variance, table_df(p, 8, 8, s), s, 0.1, 0.05) >= 0.8

    assert enough(needed) and not enough(needed - 1)
    # Eight users crossed with every repetition: this user's share is out of reach at one
    # scenario, however many repetitions meet them; a new user each repetition is not.
    assert [d.k is None for d in made.designs] == [False] + [True] * 7


def simulated_power(
    truth: tuple[float, float, float],
    design: tuple[int, int, int],
    difference: float,
    draws: int,
    seed: int,
) -> float:
    """How often a two-sided 95% t-test finds `difference` between two simulated
    configurations, each S scenarios of k agent repetitions × m user seeds with Gaussian
    agent, user and residual effects (m = 1: every trial a new user). The test is what a
    sweep's tables allow: the variance of a scenario's rate from the pooled mean squares of
    the 2·S tables, on Satterthwaite's degrees of freedom from the observed mean squares."""
    rng = np.random.default_rng(seed)
    (sa, su, sr), (k, m, s) = (math.sqrt(v) for v in truth), design
    if m == 1:
        y = rng.normal(0, math.sqrt(sum(truth)), (draws, 2, s, k, 1))
    else:
        y = (
            rng.normal(0, sa, (draws, 2, s, k, 1))
            + rng.normal(0, su, (draws, 2, s, 1, m))
            + rng.normal(0, sr, (draws, 2, s, k, m))
        )
    y[:, 1] += difference
    rows, cols = y.mean(4, keepdims=True), y.mean(3, keepdims=True)
    grand = y.mean((3, 4), keepdims=True)
    if m == 1:
        df = np.full(draws, 2.0 * s * (k - 1))
        variance = ((y - grand) ** 2).sum((1, 2, 3, 4)) / df / k
    else:
        sums = [
            m * ((rows - grand) ** 2).sum((1, 2, 3, 4)),
            k * ((cols - grand) ** 2).sum((1, 2, 3, 4)),
            ((y - rows - cols + grand) ** 2).sum((1, 2, 3, 4)),
        ]
        dfs = [2 * s * (k - 1), 2 * s * (m - 1), 2 * s * (k - 1) * (m - 1)]
        ms = [ss / d for ss, d in zip(sums, dfs, strict=True)]
        combined = ms[0] + ms[1] - ms[2]
        variance = combined / (k * m)
        df = combined**2 / sum(v * v / d for v, d in zip(ms, dfs, strict=True))
    usable = variance > 0  # a negative estimate tests nothing: counted as not found
    gap = y[:, 1].mean((1, 2, 3)) - y[:, 0].mean((1, 2, 3))
    t = gap / np.sqrt(np.where(usable, variance, 1.0) * 2 / s)
    crit = sps.t.ppf(0.975, np.where(usable, df, 1.0))
    return float(np.mean(usable & (np.abs(t) > crit)))


@pytest.mark.parametrize(
    ("truth", "design", "difference"),
    [
        ((0.02, 0.05, 0.15), (6, 4, 5), 0.2),
        ((0.08, 0.14, 0.06), (4, 3, 3), 0.35),
        ((0.02, 0.05, 0.15), (4, 1, 2), 0.5),
    ],
)
def test_the_planned_power_is_the_power_of_simulated_comparisons(
    truth: tuple[float, float, float], design: tuple[int, int, int], difference: float
) -> None:
    k, m, s = design
    planned = design_power(parts(*truth), k, m, s, difference)
    found = simulated_power(truth, design, difference, draws=20_000, seed=29)
    # 20,000 draws: a standard error under 0.004; Satterthwaite's degrees of freedom are an
    # approximation for a crossed design, exact (Student's t) for a new user each repetition.
    assert found == pytest.approx(planned, abs=0.015)
    assert 0.25 < planned < 0.9  # a power where a wrong variance or df would show


def test_without_any_variance_every_design_finds_the_difference_at_two_repetitions() -> None:
    made = plan(parts(0.0, 0.0, 0.0), 3, 0.05, 0.8, seeds=2, now=(4, 2))
    assert [(d.m, d.k) for d in made.designs] == [(1, 2), (2, 2)]
    assert (made.detectable_now, made.scenarios_now) == (0.0, 1)
