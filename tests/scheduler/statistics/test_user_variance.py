"""The simulated user's share of the variance against independent computations: statsmodels'
two-way ANOVA for the sums of squares, and simulated sweeps whose true agent, user and
residual components are known."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm

from mcp_farm.scheduler.statistics.user_variance import (
    Components,
    components,
    estimates,
    mean_se,
    sums_of_squares,
    tables_of,
)


def anova_table(y: np.ndarray) -> pd.DataFrame:
    """statsmodels' additive two-way ANOVA of a k × m table (its residual is the interaction)."""
    k, m = y.shape
    frame = pd.DataFrame(
        {"y": y.ravel(), "a": np.repeat(np.arange(k), m), "b": np.tile(np.arange(m), k)}
    )
    return anova_lm(ols("y ~ C(a) + C(b)", data=frame).fit())


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_sums_of_squares_match_statsmodels_two_way_anova(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y = (rng.random((int(rng.integers(2, 7)), int(rng.integers(2, 7)))) < 0.6).astype(float)
    y[0, 0], y[-1, -1] = 0.0, 1.0  # never constant
    found, table = sums_of_squares(y), anova_table(y)
    assert found.agent == pytest.approx(table.loc["C(a)", "sum_sq"], abs=1e-9)
    assert found.user == pytest.approx(table.loc["C(b)", "sum_sq"], abs=1e-9)
    assert found.rest == pytest.approx(table.loc["Residual", "sum_sq"], abs=1e-9)


def test_one_scenarios_components_are_the_expected_mean_squares_solved() -> None:
    y = np.array([[1, 1, 0, 1], [0, 1, 0, 0], [1, 1, 1, 1]], dtype=float)
    table = anova_table(y)
    ms_a, ms_b, ms_e = (table.loc[r, "mean_sq"] for r in ("C(a)", "C(b)", "Residual"))
    agent, user, rest, _ = estimates([y])
    assert (agent, user, rest) == pytest.approx(((ms_a - ms_e) / 4, (ms_b - ms_e) / 3, ms_e))


def test_equal_tables_pool_as_the_mean_squares_of_their_summed_sums_of_squares() -> None:
    rng = np.random.default_rng(5)
    tables = [(rng.random((3, 4)) < 0.5).astype(float) for _ in range(5)]
    sums = [sums_of_squares(t) for t in tables]
    ms_a = sum(s.agent for s in sums) / (5 * 2)
    ms_b = sum(s.user for s in sums) / (5 * 3)
    ms_e = sum(s.rest for s in sums) / (5 * 6)
    agent, user, rest, _ = estimates(tables)
    assert (agent, user, rest) == pytest.approx(((ms_a - ms_e) / 4, (ms_b - ms_e) / 3, ms_e))


def simulate(
    rng: np.random.Generator, alpha: float, beta: float, shape: tuple[int, int, int]
) -> np.ndarray:
    """S scenarios of k × m pass/fail outcomes with p = 0.5 ± alpha (agent) ± beta (user):
    σ²_agent = alpha², σ²_user = beta², σ²_rest = E[p(1 − p)] = 0.25 − alpha² − beta²."""
    s, k, m = shape
    a = alpha * rng.choice([-1.0, 1.0], size=(s, k, 1))
    b = beta * rng.choice([-1.0, 1.0], size=(s, 1, m))
    return (rng.random((s, k, m)) < 0.5 + a + b).astype(float)


def test_estimates_land_on_known_components_over_many_simulated_sweeps() -> None:
    rng = np.random.default_rng(29)
    alpha, beta = 0.15, 0.25
    truth = np.array([alpha**2, beta**2, 0.25 - alpha**2 - beta**2])
    draws = np.array(
        [estimates(list(simulate(rng, alpha, beta, (8, 5, 4))))[:3] for _ in range(600)]
    )
    # Unbiased: the mean of the unclamped estimates is within 4 standard errors of the truth.
    se = draws.std(axis=0, ddof=1) / math.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - truth) < 4 * se)
    assert np.all(se < 0.004)  # and the check is tight enough to mean something


def test_the_standard_error_formula_matches_the_spread_of_simulated_pass_rates() -> None:
    rng = np.random.default_rng(3)
    alpha, beta, shape = 0.1, 0.2, (6, 4, 3)
    rates = np.array([simulate(rng, alpha, beta, shape).mean() for _ in range(4000)])
    truth = Components(alpha**2, beta**2, 0.25 - alpha**2 - beta**2, (), 6, 4, 3)
    assert rates.std(ddof=1) == pytest.approx(mean_se(truth, 4, 3, 6), rel=0.05)


def test_a_negative_component_is_shown_as_zero_and_named() -> None:
    # Every row and column averages one half: all the spread is interaction, and the
    # unbiased agent and user estimates come out negative (−1/3 each).
    y = np.array([[1, 0], [0, 1], [1, 0], [0, 1]], dtype=float)
    found = components([y])
    assert found is not None
    assert found.clamped == ("agent", "user")
    assert (found.agent, found.user) == (0.0, 0.0)
    assert found.rest == pytest.approx(2 / 3)
    assert found.user_icc == 0.0


def test_the_users_icc_is_its_share_of_the_total() -> None:
    parts = Components(0.02, 0.06, 0.12, (), 3, 4, 4)
    assert parts.user_icc == pytest.approx(0.3)
    assert Components(0.0, 0.0, 0.0, (), 1, 2, 2).user_icc is None


def test_tables_keep_only_agent_repetitions_that_met_every_user() -> None:
    rows = [
        {"config": "c", "scenario": "s", "agent": a, "user": u, "outcome": (a + u) % 2}
        for a in range(3)
        for u in range(2)
        if (a, u) != (2, 1)
    ]
    rows.append({"config": "c", "scenario": "lone", "agent": 0, "user": 0, "outcome": 1})
    [table] = tables_of(rows)["c"]
    assert table.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    with pytest.raises(ValueError, match="given twice"):
        tables_of([*rows, rows[0]])
