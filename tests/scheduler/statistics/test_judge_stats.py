"""Judge-variance statistics against independent computations (pandas, statsmodels, scipy) and
a simulated judge whose noise is known."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.power import TTestIndPower

from mcp_farm.scheduler.statistics.judge_variance import (
    FIELDS,
    classify_difference,
    compare_means,
    judge_variance,
    spearman,
)
from mcp_farm.scheduler.statistics.power import (
    config_df,
    detectable,
    plan,
    runs_needed,
    t_power,
)
from mcp_farm.scheduler.statistics.rates import (
    student_p,
    student_quantile,
)

KEYS = ["config", "scenario", "trial"]


def messy_table(seed: int) -> pd.DataFrame:
    """Two configs, uneven runs per trial, unreadable scores, steps of unequal size."""
    rng = np.random.default_rng(seed)
    rows = []
    for config in ("m1", "m2"):
        for s in range(4):
            for t in range(int(rng.integers(1, 4))):
                quality = rng.uniform(0.2, 0.8)
                for run in range(int(rng.integers(1, 5))):
                    for c, step in enumerate(("find", "find", "cite", "explain", "explain")):
                        score = quality + rng.normal(0, 0.15)
                        if rng.random() < 0.1:
                            score = math.nan
                        rows.append((config, f"s{s}", f"t{t}", run, step, f"c{c}", score))
    return pd.DataFrame(rows, columns=list(FIELDS))


def pooled_sd(frame: pd.DataFrame, item: list[str]) -> float:
    """√(mean over items of the ddof=1 variance of the items' run means)."""
    cells = frame.dropna(subset=["score"]).groupby([*item, "run"])["score"].mean()
    variances = cells.groupby(level=list(range(len(item)))).var(ddof=1).dropna()
    return math.sqrt(variances.mean())


def icc1_by_anova(frame: pd.DataFrame) -> float:
    """ICC(1) from statsmodels' one-way ANOVA of trial-run means, with the k0 run count."""
    cells = frame.dropna(subset=["score"]).groupby([*KEYS, "run"])["score"].mean().reset_index()
    cells["item"] = cells[KEYS].agg("/".join, axis=1)
    sizes = cells.groupby("item")["score"].transform("size")
    cells = cells[sizes >= 2]
    table = anova_lm(ols("score ~ C(item)", data=cells).fit())
    msb, msw = table.loc["C(item)", "mean_sq"], table.loc["Residual", "mean_sq"]
    counts = cells.groupby("item").size().to_numpy()
    a, n = len(counts), counts.sum()
    k0 = (n - (counts**2).sum() / n) / (a - 1)
    return float((msb - msw) / (msb + (k0 - 1) * msw))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_sigmas_at_each_level_match_a_pandas_groupby(seed: int) -> None:
    frame = messy_table(seed)
    v = judge_variance(frame.to_dict("records"))
    assert v.sigma_criterion == pytest.approx(pooled_sd(frame, [*KEYS, "criterion"]), rel=1e-12)
    assert v.sigma_step == pytest.approx(pooled_sd(frame, [*KEYS, "step"]), rel=1e-12)
    assert v.sigma_scenario == pytest.approx(pooled_sd(frame, ["config", "scenario"]), rel=1e-12)
    for criterion, sigma in v.per_criterion.items():
        subset = frame[frame["criterion"] == criterion]
        assert sigma == pytest.approx(pooled_sd(subset, [*KEYS, "criterion"]), rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_icc1_matches_statsmodels_one_way_anova_with_uneven_runs(seed: int) -> None:
    frame = messy_table(seed)
    assert judge_variance(frame.to_dict("records")).icc1 == pytest.approx(
        icc1_by_anova(frame), rel=1e-9
    )


def test_counts_describe_the_table() -> None:
    frame = messy_table(5)
    v = judge_variance(frame.to_dict("records"))
    readable = frame.dropna(subset=["score"])
    runs = readable.groupby(KEYS)["run"].nunique()
    items = readable.groupby([*KEYS, "criterion"])["run"].nunique()
    assert v.trials == len(frame.groupby(KEYS))
    assert v.runs == min(runs.mode())
    assert v.items_criterion == int((items >= 2).sum())
    assert v.unreadable == int(frame["score"].isna().sum())
    assert v.noise_floor == 0.05


def test_columns_and_records_give_the_same_answer() -> None:
    frame = messy_table(6)
    columns = {name: frame[name].to_numpy() for name in FIELDS}
    assert judge_variance(columns) == judge_variance(frame.to_dict("records"))


def test_a_small_table_gives_the_hand_worked_numbers() -> None:
    # Two trials, two runs, one criterion: 0.2/0.4 and 0.6/0.8. Each item's s² is 0.02;
    # MSB = 2·(0.2² + 0.2²) = 0.16, MSW = 0.02, so ICC(1) = 0.14 / 0.18 = 7/9.
    base = {"config": "m", "scenario": "s", "step": "a", "criterion": "c"}
    rows = [
        {**base, "trial": t, "run": r, "score": score}
        for t, scores in (("t1", (0.2, 0.4)), ("t2", (0.6, 0.8)))
        for r, score in enumerate(scores)
    ]
    v = judge_variance(rows)
    assert v.sigma_criterion == pytest.approx(math.sqrt(0.02))
    assert v.icc1 == pytest.approx(7 / 9)
    # The scenario's run means are 0.4 and 0.6: s = √0.02, R = 2.
    assert v.sigma_scenario == pytest.approx(math.sqrt(0.02))
    # σ is estimated from the two means' runs: t on 2R − 2 = 2 degrees of freedom (scipy), and
    # at 80% power statsmodels' two-sample t-test power solved for the effect size.
    sigma = math.sqrt(0.02)
    assert v.resolution == pytest.approx(sps.t.ppf(0.975, 2) * math.sqrt(2) * sigma / 2**0.5)
    effect = TTestIndPower().solve_power(nobs1=2, power=0.8, alpha=0.05)
    assert v.resolution_80 == pytest.approx(effect * sigma, rel=1e-6)


def sm_power(effect: float, n: float) -> float:
    return float(TTestIndPower().power(effect_size=effect, nobs1=n, alpha=0.05))


@pytest.mark.parametrize("n", [3, 11])
def test_a_plan_by_the_normal_distribution_falls_short_and_the_t_plan_does_not(n: int) -> None:
    # The difference a z-plan says n runs resolve at 80% power: with σ estimated from the
    # runs, the t-test finds it only 56% (n = 3) or 76% (n = 11) of the time.
    z = float(sps.norm.ppf(0.975) + sps.norm.ppf(0.8))
    difference = z * math.sqrt(2 / n) * 0.2
    assert math.ceil(2 * (z * 0.2 / difference) ** 2 - 1e-9) == n
    assert sm_power(difference / 0.2, n) == pytest.approx({3: 0.564, 11: 0.760}[n], abs=0.001)
    needed = runs_needed(0.2, difference, 0.8)
    assert needed == math.ceil(TTestIndPower().solve_power(difference / 0.2, power=0.8, alpha=0.05))
    assert needed is not None and needed > n
    assert sm_power(difference / 0.2, needed) >= 0.8 > sm_power(difference / 0.2, needed - 1)


@settings(max_examples=40, deadline=None)
@given(
    effect=st.floats(0.05, 3.0),
    n=st.integers(2, 400),
    df_extra=st.integers(-1, 30),
)
def test_t_power_is_scipys_noncentral_t(effect: float, n: int, df_extra: int) -> None:
    df = max(1, 2 * n - 2 + df_extra)
    crit = sps.t.ppf(0.975, df)
    ncp = effect * math.sqrt(n / 2)
    expected = sps.nct.sf(crit, df, ncp) + sps.nct.cdf(-crit, df, ncp)
    assume(math.isfinite(expected))  # scipy's noncentral t gives NaN far out in the tail
    assert t_power(effect, n, df) == pytest.approx(expected, abs=1e-7)


@settings(max_examples=40, deadline=None)
@given(
    sigma=st.floats(0.01, 0.5),
    difference=st.floats(0.02, 0.5),
    power=st.floats(0.5, 0.99),
)
def test_runs_needed_is_the_fewest_runs_the_t_test_needs(
    sigma: float, difference: float, power: float
) -> None:
    assume(difference / sigma <= 4)  # statsmodels' power is NaN far out in the tail
    n = runs_needed(sigma, difference, power)
    assert n is not None and n >= 2
    if power == 0.5:  # the threshold: t_crit(2n − 2)·√2·σ/√n reaches the difference

        def threshold(m: int) -> float:
            return float(sps.t.ppf(0.975, 2 * m - 2)) * math.sqrt(2 / m) * sigma

        assert threshold(n) <= difference and (n == 2 or threshold(n - 1) > difference)
        return
    assert sm_power(difference / sigma, n) >= power - 1e-9
    if n > 2:
        assert sm_power(difference / sigma, n - 1) < power + 1e-9
    assert detectable(sigma, n, 2 * n - 2, power) <= difference * (1 + 1e-6)


@pytest.mark.parametrize("scenarios", [1, 3, 10, 40])
@pytest.mark.parametrize("power", [0.5, 0.8, 0.95])
def test_a_plan_over_several_scenarios_takes_the_fewest_runs_and_scenarios_that_resolve(
    scenarios: int, power: float
) -> None:
    sigma, runs, difference = 0.18, 3, 0.05

    def resolves(r: int, s: int) -> bool:
        # Two configuration means of r·s readings; σ from the spread within each scenario's
        # runs, 2·s·(r − 1) degrees of freedom (scipy's t and noncentral t).
        df, n = 2 * s * (r - 1), r * s
        crit = float(sps.t.ppf(0.975, df))
        if power == 0.5:
            return crit * math.sqrt(2 / n) * sigma <= difference
        ncp = difference / sigma * math.sqrt(n / 2)
        return float(sps.nct.sf(crit, df, ncp) + sps.nct.cdf(-crit, df, ncp)) >= power

    made = plan(sigma, runs, scenarios, difference, power)
    assert config_df(runs, scenarios) == 2 * scenarios * (runs - 1)
    if power == 0.5:
        crit = float(sps.t.ppf(0.975, config_df(runs, scenarios)))
        assert made.detectable_now == pytest.approx(
            crit * math.sqrt(2) * sigma / math.sqrt(runs * scenarios)
        )
    assert made.runs_one_scenario == runs_needed(sigma, difference, power)
    per, more = made.runs_per_transcript, made.scenarios
    assert per is not None and more is not None
    assert resolves(per, scenarios) and (per == 2 or not resolves(per - 1, scenarios))
    assert resolves(runs, more) and (more == 1 or not resolves(runs, more - 1))


def test_a_plan_gives_the_hand_worked_numbers_for_three_scenarios() -> None:
    sigma = 0.25 / math.sqrt(2)  # two runs 0.25 apart on every scenario
    threshold, powered = plan(sigma, 2, 3, 0.05, 0.5), plan(sigma, 2, 3, 0.05, 0.8)
    # The normal distribution said 97 and 197 runs in all; with σ estimated from the runs the
    # t-test needs 98 and 198 (statsmodels: 197.2 at 80% power).
    assert (threshold.runs_one_scenario, powered.runs_one_scenario) == (98, 198)
    assert (threshold.runs_per_transcript, powered.runs_per_transcript) == (33, 66)
    assert (threshold.scenarios, powered.scenarios) == (50, 100)
    # Now: 3 scenarios × 2 runs, σ on 6 degrees of freedom: t₀.₉₇₅(6) = 2.447.
    assert threshold.detectable_now == pytest.approx(2.446912 * 0.25 / math.sqrt(6), abs=1e-6)


def test_a_plan_with_single_runs_has_no_degrees_of_freedom_to_test_by() -> None:
    made = plan(0.2, 1, 3, 0.05, 0.8)
    assert made.detectable_now is None and made.scenarios is None
    assert made.runs_per_transcript is not None and made.runs_per_transcript >= 2


def simulated(noise: float, seed: int = 7) -> dict[str, Any]:
    """200 scenarios × 5 trials × 2 steps of 5 criteria × 4 runs; each trial has a true
    quality in [0.4, 0.6] and each run adds N(0, noise) to every criterion independently.
    Scores are not clipped, so the noise stays exactly Gaussian; a true score is at least 4σ
    from either end, so at σ=0.1 under 1 in 100,000 scores falls outside [0, 1] anyway."""
    rng = np.random.default_rng(seed)
    scenarios, trials, criteria, runs = 200, 5, 10, 4
    shape = (scenarios, trials, criteria, runs)
    s, t, c, r = (a.ravel() for a in np.indices(shape))
    quality = rng.uniform(0.4, 0.6, size=(scenarios, trials))
    score = quality[s, t] + rng.normal(0, noise, size=s.size) if noise else quality[s, t]
    return {
        "config": np.full(s.size, "m"),
        "scenario": s.astype(str),
        "trial": np.char.add(s.astype(str), np.char.add("/", t.astype(str))),
        "run": r,
        "step": np.where(c < 5, "find", "explain"),
        "criterion": c.astype(str),
        "score": score,
    }


def test_a_simulated_judge_with_known_noise_is_measured_at_every_level() -> None:
    v = judge_variance(simulated(noise=0.1))
    assert v.runs == 4
    assert v.trials == 1000
    # The pooled variance has items·(R-1) degrees of freedom; the relative standard error of
    # the SD is about 1/√(2·df). The tolerances are four of those.
    # criterion: 10,000 items · 3 df → 0.4%; step: 2,000 · 3 → 0.9%; scenario: 200 · 3 → 2.9%.
    assert v.sigma_criterion == pytest.approx(0.1, rel=0.02)
    assert v.sigma_step == pytest.approx(0.1 / math.sqrt(5), rel=0.04)
    assert v.sigma_scenario == pytest.approx(0.1 / math.sqrt(10 * 5), rel=0.12)
    assert v.sigma_criterion is not None and v.sigma_scenario is not None
    assert v.sigma_criterion / v.sigma_scenario == pytest.approx(math.sqrt(50), rel=0.12)
    # True trial variance 0.2²/12 against judge variance 0.1²/10 at trial level.
    expected_icc = (0.04 / 12) / (0.04 / 12 + 0.01 / 10)
    assert v.icc1 == pytest.approx(expected_icc, abs=0.04)
    assert all(sigma == pytest.approx(0.1, rel=0.05) for sigma in v.per_criterion.values())


def test_a_judge_without_noise_has_zero_sigma_and_icc_one() -> None:
    v = judge_variance(simulated(noise=0.0))
    for sigma in (v.sigma_criterion, v.sigma_step, v.sigma_scenario, v.resolution):
        assert sigma == pytest.approx(0.0, abs=1e-12)
    assert v.icc1 == pytest.approx(1.0)


def test_single_runs_give_no_sigma_and_no_icc() -> None:
    table = simulated(noise=0.1)
    first = table["run"] == 0
    v = judge_variance({name: column[first] for name, column in table.items()})
    assert (v.sigma_criterion, v.sigma_step, v.sigma_scenario, v.icc1, v.resolution) == (
        None,
        None,
        None,
        None,
        None,
    )
    assert v.runs == 1
    assert v.items_criterion == 0
    assert v.per_criterion == {}


def test_an_unreadable_run_leaves_its_item_out() -> None:
    base = {"config": "m", "scenario": "s", "trial": "t", "step": "a"}
    rows = [
        {**base, "run": 0, "criterion": "c1", "score": 0.5},
        {**base, "run": 1, "criterion": "c1", "score": math.nan},
        {**base, "run": 0, "criterion": "c2", "score": 0.25},
        {**base, "run": 1, "criterion": "c2", "score": 0.75},
    ]
    v = judge_variance(rows)
    assert v.unreadable == 1
    assert v.items_criterion == 1
    assert v.per_criterion == {"c2": pytest.approx(math.sqrt(0.125))}


def test_identical_scores_everywhere_give_no_icc() -> None:
    table = simulated(noise=0.0)
    table["score"] = np.full(table["score"].size, 0.5)
    v = judge_variance(table)
    assert v.icc1 is None
    assert v.sigma_criterion == 0.0


def test_columns_of_unequal_length_are_refused() -> None:
    table = simulated(noise=0.1)
    table["score"] = table["score"][:-1]
    with pytest.raises(ValueError, match="length"):
        judge_variance(table)


@pytest.mark.parametrize(
    ("x", "y"),
    [
        ([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]),
        ([1, 2, 2, 3, 3, 3], [1, 1, 2, 2, 3, 9]),
        ([0.1, 0.4, 0.4, 0.9], [0.9, 0.2, 0.2, 0.1]),
        ([3, 1, 2], [1, 2, 3]),
        ([1, 2], [2, 1]),
    ],
)
def test_spearman_matches_scipy_including_ties(x: list[float], y: list[float]) -> None:
    assert spearman(x, y) == pytest.approx(sps.spearmanr(x, y).statistic, abs=1e-12)


@pytest.mark.parametrize(
    ("x", "y"), [([], []), ([1.0], [2.0]), ([1, 1, 1], [1, 2, 3]), ([1, 2, 3], [1, math.nan, 2])]
)
def test_spearman_is_nan_without_two_ranked_points_on_each_side(
    x: list[float], y: list[float]
) -> None:
    assert math.isnan(spearman(x, y))


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=3, max_size=30))
def test_spearman_agrees_with_scipy_on_tied_integer_data(pairs: list[tuple[int, int]]) -> None:
    x, y = [p[0] for p in pairs], [p[1] for p in pairs]
    if len(set(x)) < 2 or len(set(y)) < 2:
        assert math.isnan(spearman(x, y))
    else:
        assert spearman(x, y) == pytest.approx(sps.spearmanr(x, y).statistic, abs=1e-9)


@pytest.mark.parametrize(
    ("diff", "verdict"), [(0.0, "noise"), (0.049, "noise"), (-0.049, "noise"), (0.05, "finding"),
                          (-0.2, "finding"), (math.nan, "noise")]
)  # fmt: skip
def test_differences_inside_the_noise_floor_are_noise(diff: float, verdict: str) -> None:
    assert classify_difference(diff, 0.05) == verdict


def test_compare_means_matches_scipy_paired_t() -> None:
    rng = np.random.default_rng(3)
    a = {f"s{i}": float(rng.uniform(0.3, 0.7)) for i in range(12)}
    b = {key: value + float(rng.normal(0.03, 0.05)) for key, value in a.items()}
    b["only-b"], a["only-a"] = 0.9, 0.1
    result = compare_means(a, b)
    keys = sorted(set(a) & set(b))
    xa, xb = [a[k] for k in keys], [b[k] for k in keys]
    test = sps.ttest_rel(xb, xa)
    d = np.subtract(xb, xa)
    half = sps.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    assert result.n == 12
    assert result.diff == pytest.approx(d.mean())
    assert (result.a_mean, result.b_mean) == pytest.approx((np.mean(xa), np.mean(xb)))
    assert result.p == pytest.approx(test.pvalue, rel=1e-6)
    assert (result.low, result.high) == pytest.approx((d.mean() - half, d.mean() + half), rel=1e-6)


def test_compare_means_with_one_shared_scenario_has_no_p_and_an_infinite_interval() -> None:
    result = compare_means({"s1": 0.4, "s2": 0.5}, {"s1": 0.6})
    assert result.n == 1
    assert result.diff == pytest.approx(0.2)
    assert math.isnan(result.p)
    assert (result.low, result.high) == (-math.inf, math.inf)
    assert compare_means({}, {}).n == 0


def test_compare_means_of_identical_arms_finds_nothing() -> None:
    arm = {"s1": 0.4, "s2": 0.5, "s3": 0.7}
    result = compare_means(arm, arm)
    assert (result.diff, result.low, result.high, result.p) == (0.0, 0.0, 0.0, 1.0)


NAMES = st.sampled_from(["a", "b", "c"])
SCORES = st.one_of(st.floats(0, 1), st.just(math.nan), st.none())
RECORDS = st.lists(
    st.fixed_dictionaries(
        {
            "config": NAMES,
            "scenario": NAMES,
            "trial": NAMES,
            "run": st.integers(0, 3),
            "step": NAMES,
            "criterion": NAMES,
            "score": SCORES,
        }
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(RECORDS)
def test_no_table_raises_and_every_sigma_is_non_negative(records: list[dict[str, Any]]) -> None:
    v = judge_variance(records)
    for sigma in (v.sigma_criterion, v.sigma_step, v.sigma_scenario, v.resolution):
        assert sigma is None or sigma >= 0
    assert all(sigma >= 0 for sigma in v.per_criterion.values())
    assert v.icc1 is None or (math.isfinite(v.icc1) and v.icc1 <= 1 + 1e-9)
    assert v.unreadable == sum(r["score"] is None or math.isnan(r["score"]) for r in records)
    assert 0 <= v.runs <= 4


@given(
    st.dictionaries(NAMES, st.one_of(st.floats(0, 1), st.just(math.nan))),
    st.dictionaries(NAMES, st.one_of(st.floats(0, 1), st.just(math.nan))),
)
def test_compare_means_never_raises_and_its_interval_holds_the_difference(
    a: dict[str, float], b: dict[str, float]
) -> None:
    result = compare_means(a, b)
    if result.n:
        assert result.low <= result.diff <= result.high
    assert math.isnan(result.p) or 0 <= result.p <= 1


@pytest.mark.parametrize("df", [1, 2, 3, 5, 11, 30, 200])
@pytest.mark.parametrize("t", [0.0, 0.3, 1.0, 1.5, 2.0, 4.0, 12.7, 80.0])
def test_the_t_p_value_and_quantile_match_scipy(df: int, t: float) -> None:
    assert student_p(t, df) == pytest.approx(2 * sps.t.sf(t, df), rel=1e-9, abs=1e-300)
    assert student_quantile(df) == pytest.approx(sps.t.ppf(0.975, df), rel=1e-9)


def test_a_paired_t_on_the_incomplete_beta_switch_point_still_gets_a_p_value() -> None:
    # Differences 0 and 0.5 give t = 1 on 1 df: x = df/(df + t²) = 1/2 is exactly the point
    # where the continued fraction switches side.
    result = compare_means({"s0": 0.0, "s1": 0.0}, {"s0": 0.0, "s1": 0.5})
    assert result.p == pytest.approx(sps.ttest_rel([0.0, 0.5], [0.0, 0.0]).pvalue)
