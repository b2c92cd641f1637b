"""How much of a pass rate is the simulated user: agent repetitions crossed with user seeds.

Per configuration and scenario, a sweep with `user_model.seeds: m` runs a k × m table of
pass/fail outcomes: agent repetition i (its own sampling seed) against user seed j (the user's
own seed), one trial per cell. The two-way crossed random-effects model is

    y_ij = μ + a_i + b_j + e_ij,   a ~ (0, σ²_agent), b ~ (0, σ²_user), e ~ (0, σ²_rest)

where e is the agent × user interaction and the residual together: with one observation per
cell they cannot be told apart, so the third component is "interaction + residual". The
components come from the ANOVA expected mean squares, E[MS_agent] = σ²_rest + m·σ²_agent,
E[MS_user] = σ²_rest + k·σ²_user, E[MS_rest] = σ²_rest, pooled over a configuration's
scenarios (each scenario centred on its own mean, so scenario difficulty is no part of any
component). A negative estimate is clamped to 0, and the result says which were.
`user_icc` is σ²_user over the total: the share of one trial's outcome variance that is which
user the agent met. `mean_se` is the standard error of a configuration's pass rate from these
components with k × m cells per scenario and S scenarios; user_power.py plans a comparison of
two configurations from them.

Pure numpy: no database, no scipy at run time (the tests check against statsmodels).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

FIELDS = ("config", "scenario", "agent", "user", "outcome")
"""The columns of a crossed table: config, scenario, agent repetition, user seed, 0/1 outcome."""
Z95 = 1.959963984540054
"""The two-sided 95% normal quantile: the scorecard's half-width of a pass rate is Z95 · SE."""

Floats = NDArray[np.float64]


@dataclass(frozen=True)
class SumsOfSquares:
    """One complete k × m table's sums of squares about its own means, and their degrees of
    freedom: rows are agent repetitions, columns user seeds, one observation per cell."""

    k: int
    m: int
    agent: float
    """m · Σ_i (ȳ_i. − ȳ..)², on k − 1 degrees of freedom."""
    user: float
    """k · Σ_j (ȳ_.j − ȳ..)², on m − 1 degrees of freedom."""
    rest: float
    """Σ_ij (y_ij − ȳ_i. − ȳ_.j + ȳ..)², on (k − 1)(m − 1) degrees of freedom."""


@dataclass(frozen=True)
class Components:
    """The variance components of one configuration, pooled over its scenarios' tables."""

    agent: float
    """σ²_agent: between agent repetitions (the same agent seed against every user)."""
    user: float
    """σ²_user: between user seeds (the same user against every agent repetition)."""
    rest: float
    """σ²_interaction + σ²_residual: not separable with one trial per cell."""
    clamped: tuple[str, ...]
    """The components whose estimate was negative and is shown as 0 ("agent", "user")."""
    scenarios: int
    """Scenarios with a complete table of at least 2 × 2 cells (the others are left out)."""
    k: int
    """Agent repetitions per scenario (the most common; tables may differ)."""
    m: int
    """User seeds per scenario (the most common)."""

    @property
    def total(self) -> float:
        """The variance of one trial's outcome within a scenario: the three components."""
        return self.agent + self.user + self.rest

    @property
    def user_icc(self) -> float | None:
        """σ²_user / total: how much of a trial's outcome is which user it met; None when the
        outcomes do not vary at all."""
        return self.user / self.total if self.total > 0 else None


def sums_of_squares(table: ArrayLike) -> SumsOfSquares:
    """The two-way ANOVA sums of squares of a complete k × m table (no missing cell)."""
    y = np.asarray(table, dtype=float)
    if y.ndim != 2 or not np.isfinite(y).all():
        raise ValueError("a crossed table is a complete 2-d array of finite outcomes")
    k, m = y.shape
    grand = y.mean()
    rows, cols = y.mean(axis=1), y.mean(axis=0)
    rest = y - rows[:, None] - cols[None, :] + grand
    return SumsOfSquares(
        k=k,
        m=m,
        agent=float(m * ((rows - grand) ** 2).sum()),
        user=float(k * ((cols - grand) ** 2).sum()),
        rest=float((rest**2).sum()),
    )


def estimates(tables: Iterable[ArrayLike]) -> tuple[float, float, float, list[SumsOfSquares]]:
    """The unclamped ANOVA estimates (σ²_agent, σ²_user, σ²_rest) pooled over scenarios' k × m
    tables (sizes may differ), and the tables' sums of squares; NaN without a usable table.

    Summing E[SS] over scenarios s: E[Σ SS_rest] = σ²_rest · Σ (k_s−1)(m_s−1),
    E[Σ SS_agent] = Σ (k_s−1)(σ²_rest + m_s σ²_agent), and likewise for the user, so
    σ²_agent = (Σ SS_agent − σ²_rest Σ (k_s−1)) / Σ (k_s−1) m_s. With equal tables this is
    (MS_agent − MS_rest) / m. Unbiased, so it may be negative. Tables smaller than 2 × 2 carry
    no interaction degrees of freedom and are left out.
    """
    sums = [s for s in map(sums_of_squares, tables) if s.k >= 2 and s.m >= 2]
    if not sums:
        return math.nan, math.nan, math.nan, sums
    rest = sum(s.rest for s in sums) / sum((s.k - 1) * (s.m - 1) for s in sums)
    agent = (sum(s.agent for s in sums) - rest * sum(s.k - 1 for s in sums)) / sum(
        (s.k - 1) * s.m for s in sums
    )
    user = (sum(s.user for s in sums) - rest * sum(s.m - 1 for s in sums)) / sum(
        (s.m - 1) * s.k for s in sums
    )
    return agent, user, rest, sums


def components(tables: Iterable[ArrayLike]) -> Components | None:
    """The estimates as reported: a negative σ²_agent or σ²_user is shown as 0 (and named in
    `clamped`); None without a table of at least 2 × 2 cells."""
    agent, user, rest, sums = estimates(tables)
    if not sums:
        return None
    clamped = tuple(name for name, value in (("agent", agent), ("user", user)) if value < 0)
    return Components(
        agent=max(agent, 0.0),
        user=max(user, 0.0),
        rest=rest,
        clamped=clamped,
        scenarios=len(sums),
        k=_mode([s.k for s in sums]),
        m=_mode([s.m for s in sums]),
    )


def _mode(values: list[int]) -> int:
    """The most common value (the smallest of the most common)."""
    return min(values, key=lambda v: (-values.count(v), v))


def tables_of(
    records: Iterable[Mapping[str, Any]],
) -> dict[str, list[Floats]]:
    """Config → its scenarios' complete k × m tables, from rows with the FIELDS (one outcome
    per cell; a cell given twice is an error). A scenario whose table has an empty cell keeps
    only the agent repetitions that met every user seed (a trial lost to an infrastructure
    error must not make the table ragged); one left with fewer than 2 × 2 cells is left out."""
    cells: dict[tuple[str, str], dict[tuple[Any, Any], float]] = defaultdict(dict)
    for row in records:
        place = (str(row["config"]), str(row["scenario"]))
        cell = (row["agent"], row["user"])
        if cell in cells[place]:
            raise ValueError(f"{place[0]} {place[1]}: cell {cell} is given twice")
        cells[place][cell] = float(row["outcome"])
    found: dict[str, list[Floats]] = defaultdict(list)
    for (config, _scenario), values in sorted(cells.items()):
        users = sorted({u for _a, u in values})
        agents = sorted(a for a in {a for a, _u in values} if all((a, u) in values for u in users))
        if len(agents) >= 2 and len(users) >= 2:
            found[config].append(np.array([[values[(a, u)] for u in users] for a in agents]))
    return dict(found)


def mean_se(parts: Components, k: int, m: int, scenarios: int) -> float:
    """The standard error of a configuration's pass rate over `scenarios` scenarios of k agent
    repetitions × m user seeds each: √((σ²_agent/k + σ²_user/m + σ²_rest/(k·m)) / S). The
    scenarios are held fixed (two configurations compared on the same scenarios), so their
    spread in difficulty is no part of it."""
    return math.sqrt((parts.agent / k + parts.user / m + parts.rest / (k * m)) / scenarios)
