"""The scorecard statistics against independent computations (statsmodels, scipy, numpy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps
from scipy.optimize import minimize_scalar
from scipy.special import comb
from statsmodels.stats import proportion as sm_proportion
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from mcp_farm.scheduler.statistics.rates import (
    MIN_CLUSTERS,
    clustered_se,
    compare_rates,
    holm,
    pass_at_k,
    pass_hat_k,
    percentiles,
    score_difference,
    score_z,
    student_p,
    student_quantile,
    wilson,
)


@pytest.mark.parametrize(
    ("passes", "n"), [(0, 1), (1, 1), (0, 10), (10, 10), (3, 10), (57, 100), (1, 1000)]
)
def test_wilson_matches_statsmodels(passes: int, n: int) -> None:
    low, high = proportion_confint(passes, n, alpha=0.05, method="wilson")
    assert wilson(passes, n) == pytest.approx((low, high), abs=1e-12)


def test_wilson_of_an_empty_cell_is_the_whole_range() -> None:
    assert wilson(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [
        (10, 10, 10),
        (10, 0, 3),
        (10, 7, 1),
        (10, 7, 3),
        (5, 4, 5),
        (1, 1, 1),
        (1, 0, 1),
        (20, 13, 8),
    ],
)
def test_pass_hat_k_and_pass_at_k_match_the_combinatorial_formulas(n: int, c: int, k: int) -> None:
    assert pass_hat_k(n, c, k) == pytest.approx(comb(c, k, exact=True) / comb(n, k, exact=True))
    at_k = 1 - comb(n - c, k, exact=True) / comb(n, k, exact=True)
    assert pass_at_k(n, c, k) == pytest.approx(at_k)


@pytest.mark.parametrize(("n", "k"), [(1000, 1000), (1000, 333), (40, 7)])
def test_pass_hat_k_is_zero_when_fewer_passed_than_were_drawn(n: int, k: int) -> None:
    for c in range(k):
        assert pass_hat_k(n, c, k) == 0.0
        assert pass_at_k(n, n - c, k) == 1.0
    assert pass_hat_k(n, k, k) == pytest.approx(1 / comb(n, k, exact=True))


def test_pass_k_with_one_repetition_is_the_pass_rate_and_undefined_past_n() -> None:
    assert pass_hat_k(1, 1, 1) == pass_at_k(1, 1, 1) == 1.0
    assert math.isnan(pass_hat_k(3, 2, 4))
    assert math.isnan(pass_at_k(0, 0, 1))


def test_percentiles_interpolate_like_numpy_and_are_nan_without_samples() -> None:
    values = np.random.default_rng(3).lognormal(size=101)
    assert percentiles(values) == pytest.approx(tuple(np.percentile(values, [50, 95, 99])))
    assert all(math.isnan(v) for v in percentiles([]))


def _ols_cluster_se(a: dict[str, list[int]], b: dict[str, list[int]]) -> tuple[float, float]:
    """The same difference as an OLS of pass on arm, with scenario-clustered errors."""
    y, arm, groups = [], [], []
    names = sorted(set(a) | set(b))
    for side, data in ((0, a), (1, b)):
        for scenario, outcomes in data.items():
            y += outcomes
            arm += [side] * len(outcomes)
            groups += [names.index(scenario)] * len(outcomes)
    fit = sm.OLS(np.asarray(y, float), sm.add_constant(np.asarray(arm, float))).fit(
        cov_type="cluster", cov_kwds={"groups": np.asarray(groups)}
    )
    return float(fit.params[1]), float(fit.bse[1])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_clustered_difference_matches_statsmodels_cluster_robust_ols(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.1, 0.9, 12)
    a = {f"s{i}": list((rng.random(8) < r).astype(int)) for i, r in enumerate(rates)}
    # B covers most of the same scenarios (paired) plus two of its own, with other counts.
    b = {f"s{i}": list((rng.random(6) < r - 0.1).astype(int)) for i, r in enumerate(rates[:10])}
    b |= {"extra1": [1, 0, 1], "extra2": [0, 0]}
    diff, se = _ols_cluster_se(a, b)
    counts_a = {k: (len(v), int(sum(v))) for k, v in a.items()}
    counts_b = {k: (len(v), int(sum(v))) for k, v in b.items()}
    assert clustered_se(counts_a, counts_b) == pytest.approx(se, rel=1e-9)
    got = compare_rates(counts_a, counts_b)
    assert (got.method, got.clusters) == ("clustered", 14)
    assert got.diff == pytest.approx(diff)
    half = sps.t.ppf(0.975, 13) * se
    assert (got.low, got.high) == pytest.approx((diff - half, diff + half))
    assert got.p == pytest.approx(2 * sps.t.sf(abs(diff / se), 13))


@pytest.mark.parametrize(("t", "df"), [(0.0, 3), (0.5, 1), (2.1, 4), (-3.3, 12), (1.96, 200)])
def test_student_p_and_quantile_match_scipy(t: float, df: int) -> None:
    assert student_p(t, df) == pytest.approx(2 * sps.t.sf(abs(t), df), rel=1e-9, abs=1e-12)
    assert student_quantile(df) == pytest.approx(sps.t.ppf(0.975, df), rel=1e-9)


TABLES = [
    (10, 8, 10, 2),
    (10, 0, 10, 0),
    (5, 5, 7, 0),
    (20, 13, 30, 9),
    (1, 1, 1, 0),
    (25, 3, 14, 7),
]


@pytest.mark.parametrize("table", TABLES)
def test_the_score_test_at_no_difference_matches_statsmodels(
    table: tuple[int, int, int, int],
) -> None:
    a_n, a_c, b_n, b_c = table
    with np.errstate(divide="ignore", invalid="ignore"):  # its ratio of two 0% rates
        expected = sm_proportion.test_proportions_2indep(
            b_c, b_n, a_c, a_n, method="score", compare="diff", correction=True
        ).pvalue
    _low, _high, p = score_difference(a_n, a_c, b_n, b_c)
    assert p == pytest.approx(1.0 if math.isnan(expected) else expected, rel=1e-9)


def _restricted_by_search(x1: int, n1: int, x2: int, n2: int, delta: float) -> float:
    """The score statistic with the restricted estimate found by a numeric search (scipy), not
    by the closed form: statsmodels' own inversion leaves the parameter space on some tables."""

    def minus_log_likelihood(p2: float) -> float:
        p1, tiny = p2 + delta, 1e-300
        return -(
            x1 * math.log(max(p1, tiny))
            + (n1 - x1) * math.log(max(1 - p1, tiny))
            + x2 * math.log(max(p2, tiny))
            + (n2 - x2) * math.log(max(1 - p2, tiny))
        )

    low, high = max(0.0, -delta), min(1.0, 1.0 - delta)
    p2 = minimize_scalar(minus_log_likelihood, bounds=(low, high), method="bounded").x
    p1, total = p2 + delta, n1 + n2
    variance = (p1 * (1 - p1) / n1 + p2 * (1 - p2) / n2) * total / (total - 1)
    return float((x1 / n1 - x2 / n2 - delta) / math.sqrt(variance))


@pytest.mark.parametrize("table", [t for t in TABLES if t[1] != t[3] or t[0] != t[2]])
def test_the_score_interval_ends_where_the_score_test_rejects(
    table: tuple[int, int, int, int],
) -> None:
    a_n, a_c, b_n, b_c = table
    low, high, _p = score_difference(a_n, a_c, b_n, b_c)
    for end, sign in ((low, 1), (high, -1)):
        if abs(end) < 1 - 1e-9:
            assert score_z(b_c, b_n, a_c, a_n, end) == pytest.approx(sign * 1.959964, abs=1e-4)
            assert _restricted_by_search(b_c, b_n, a_c, a_n, end) == pytest.approx(
                sign * 1.959964, abs=1e-3
            )


def test_compare_rates_edge_cases() -> None:
    same = compare_rates({"s": (5, 5), "t": (5, 5)}, {"s": (5, 5), "t": (5, 5)})
    assert (same.diff, same.p) == (0.0, 1.0)
    empty = compare_rates({}, {"s": (3, 1)})
    assert math.isnan(empty.diff) and empty.p == 1.0
    # Too few scenarios to cluster on: the score test on the pooled counts.
    few = compare_rates({"s": (10, 2)}, {"s": (10, 8)})
    assert few.method == "score" and MIN_CLUSTERS > 1
    expected = sm_proportion.test_proportions_2indep(
        8, 10, 2, 10, method="score", correction=True
    ).pvalue
    assert few.p == pytest.approx(expected)
    assert few.low < few.diff < few.high


def test_holm_matches_statsmodels() -> None:
    pvalues = [0.01, 0.04, 0.03, 0.2, 0.0001, 0.5]
    expected = multipletests(pvalues, method="holm")[1]
    assert holm(pvalues) == pytest.approx(list(expected))
