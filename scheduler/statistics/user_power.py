"""Power of a comparison of two configurations' pass rates when every scenario runs agent
repetitions crossed with user seeds: the repetitions k, user seeds m and scenarios S that find
a difference, by the t-test of power.py, with the variance built from the agent, user and
interaction components (docs/simulated-user.md, "Planning").

The test compares two configurations' pass rates over the same S scenarios; each scenario's
pass rate over its k × m trials varies by `table_variance`, which the test estimates from the
scenarios' own tables (so a configuration's mean is a mean of S readings, σ² = that variance,
on `table_df` degrees of freedom). Pure numpy, as power.py (the tests check it against
statsmodels and a simulation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mcp_farm.scheduler.statistics.power import (
    ALPHA,
    config_df,
    detectable,
    fewest,
    reaches,
    t_power,
)
from mcp_farm.scheduler.statistics.user_variance import Components


def table_variance(parts: Components, k: int, m: int) -> float:
    """The variance of one scenario's pass rate over k agent repetitions: crossed with m ≥ 2
    user seeds (every repetition meets the same m users), σ²_agent/k + σ²_user/m +
    σ²_rest/(k·m); with m = 1 (`seeds: 1`: a new user every repetition, so every trial is an
    independent draw of agent and user), total/k."""
    if m == 1:
        return parts.total / k
    return parts.agent / k + parts.user / m + parts.rest / (k * m)


def table_df(parts: Components, k: int, m: int, scenarios: int) -> float:
    """The degrees of freedom of that variance as the test estimates it from two
    configurations' 2·S tables. With a new user every repetition: the spread of each
    scenario's k trials, 2·S·(k − 1) (power.config_df, as for judge runs). Crossed: the
    estimate is (MS_agent + MS_user − MS_rest)/(k·m), whose degrees of freedom Satterthwaite's
    approximation gives from the mean squares' expected values (σ²_rest + m·σ²_agent on
    k − 1, σ²_rest + k·σ²_user on m − 1, σ²_rest on (k − 1)(m − 1), per table). Zero with one
    repetition: the agent's share cannot be told from within a scenario then."""
    if k < 2:
        return 0.0
    if m == 1:
        return float(config_df(k, scenarios))
    agent, user, rest = parts.rest + m * parts.agent, parts.rest + k * parts.user, parts.rest
    spread = agent**2 / (k - 1) + user**2 / (m - 1) + rest**2 / ((k - 1) * (m - 1))
    return 2 * scenarios * (agent + user - rest) ** 2 / spread


def design_power(
    parts: Components, k: int, m: int, scenarios: int, difference: float, alpha: float = ALPHA
) -> float:
    """The chance that the two-sided t-test at level `alpha` finds a true `difference` between
    two configurations' pass rates, each over S scenarios of k × m trials."""
    variance = table_variance(parts, k, m)
    if variance <= 0:
        return 1.0
    effect = difference / math.sqrt(variance)
    return t_power(effect, scenarios, table_df(parts, k, m, scenarios), alpha)


def detects(
    parts: Components,
    k: int,
    m: int,
    scenarios: int,
    difference: float,
    power: float,
    alpha: float = ALPHA,
) -> bool:
    """Whether S scenarios of k × m trials per configuration find `difference` with `power`."""
    variance = table_variance(parts, k, m)
    if variance <= 0:
        return k >= 2
    df = table_df(parts, k, m, scenarios)
    return reaches(math.sqrt(variance), difference, scenarios, df, power, alpha)


def detectable_difference(
    parts: Components, k: int, m: int, scenarios: int, power: float, alpha: float = ALPHA
) -> float | None:
    """The difference between two configurations' pass rates that S scenarios of k × m trials
    each find with `power`; None without degrees of freedom."""
    variance = table_variance(parts, k, m)
    if variance <= 0:
        return 0.0
    found = detectable(
        math.sqrt(variance), scenarios, table_df(parts, k, m, scenarios), power, alpha
    )
    return found if math.isfinite(found) else None


def within_reach(
    parts: Components, m: int, scenarios: int, difference: float, power: float, alpha: float
) -> bool:
    """Whether some number of repetitions finds the difference with m user seeds: crossed, as
    k grows the variance falls to σ²_user/m and its degrees of freedom rise to 2·S·(m − 1),
    where the user's share alone decides."""
    if m == 1 or parts.user <= 0:
        return True
    sigma = math.sqrt(parts.user / m)
    return reaches(sigma, difference, scenarios, 2 * scenarios * (m - 1), power, alpha)


def repetitions(
    parts: Components, m: int, scenarios: int, difference: float, power: float, alpha: float
) -> int | None:
    """The fewest agent repetitions (at least 2) that find the difference with m user seeds
    over S scenarios; None when none does."""
    if not within_reach(parts, m, scenarios, difference, power, alpha):
        return None
    return fewest(lambda k: detects(parts, k, m, scenarios, difference, power, alpha), 2)


@dataclass(frozen=True)
class Design:
    """The fewest agent repetitions that, with m user seeds, find the difference."""

    m: int
    """User seeds per agent repetition (1: a new user every repetition, `seeds: 1`)."""
    k: int | None
    """Agent repetitions per scenario (at least 2); None: out of reach at this m (the user's
    share, σ²_user/m, does not shrink with more repetitions)."""
    power: float | None
    """The power k reaches (at least the one asked for)."""

    @property
    def trials_per_scenario(self) -> int | None:
        return None if self.k is None else self.k * self.m


@dataclass(frozen=True)
class UserPlan:
    """What finding a difference between two configurations' pass rates takes."""

    designs: list[Design]
    """For m = 1 … seeds: the fewest repetitions at the plan's scenarios."""
    detectable_now: float | None
    """The difference the measured design (its k × m over the plan's scenarios) finds with
    the power; None without a measured design."""
    scenarios_now: int | None
    """Scenarios the measured design needs for the difference; None without one, or out of
    reach."""


def plan(
    parts: Components,
    scenarios: int,
    difference: float,
    power: float,
    alpha: float = ALPHA,
    seeds: int = 8,
    now: tuple[int, int] | None = None,
) -> UserPlan:
    """Repetitions per user-seed count, and for the measured design `now` (k, m) the
    difference it finds and the scenarios it needs."""
    designs = []
    for m in range(1, seeds + 1):
        k = repetitions(parts, m, scenarios, difference, power, alpha)
        reached = None if k is None else design_power(parts, k, m, scenarios, difference, alpha)
        designs.append(Design(m, k, reached))
    if now is None:
        return UserPlan(designs, None, None)
    k, m = now
    return UserPlan(
        designs,
        detectable_difference(parts, k, m, scenarios, power, alpha),
        fewest(lambda s: detects(parts, k, m, s, difference, power, alpha), 1),
    )
