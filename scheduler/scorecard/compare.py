"""Compare two sweeps, or two configurations inside sweeps: per cell, the difference in pass
rate with a 95% interval clustered by scenario, and which differences are significant.

A side is `SWEEP` or `SWEEP@MODEL[/PROMPT]`. Two plain sweeps are matched cell by cell on
model, prompt and key; sides naming a configuration are matched on the key alone (so
`S@gemma/json` vs `S@gemma/native` compares two prompt configs of one sweep).

Repetitions of one scenario are not independent, so cells spanning several scenarios cluster by
scenario; a cell with fewer than five scenarios (a single-scenario cell, a rarely used tool)
uses the Miettinen–Nurminen score test on its pooled counts instead (see
scheduler/statistics/rates.py). Either test has its own interval: the differences it does not
reject. Holm's adjustment runs within each kind of cell (config, tool, tier, …), so a table of
forty tools does not turn noise into a finding; each cell's interval, and the repetitions it
suggests, are at the level Holm tested that cell at (`corrected_alpha`). The verdict is read
from that interval, as printed, unclipped: a cell is significant when it excludes 0, so the
word and the interval cannot disagree.

Two kinds of cell read the conversations only, per configuration: `conversation` (the
conversation pass rate) and `turn` (the turn pass rate, turns graded and passed, still clustered
by scenario since the turns of one conversation are not independent either).

Three kinds read the state probes, per configuration, over the trials that had probes
(scheduler/scorecard/queries/scan.py counts them): `state` (the state pass rate), `wrong_state`
(trials failed by their state while their calls passed) and `other_path` (state passed while the
calls did not). Their direction differs: a higher `state` rate is better, a higher `wrong_state`
rate worse, and `other_path` is a disagreement, neither better nor worse, so a significant
change in it is `changed`, never a regression or an improvement.

Trials with a simulated user are compared as any others; `user_note` says when the two sides
met different simulated users (or one side several), since a difference may then be the
users' rather than the agents'.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from mcp_farm.scheduler.scorecard.conversations import tally
from mcp_farm.scheduler.scorecard.latency import row_keys
from mcp_farm.scheduler.scorecard.queries.comparisons import conversation_rows, trial_counts
from mcp_farm.scheduler.scorecard.queries.conversations import user_identities
from mcp_farm.scheduler.statistics.rates import (
    EQUIVALENCE,
    Difference,
    compare_rates,
    corrected_alpha,
    first_try_rate,
    holm,
    trials_to_resolve,
)
from mcp_farm.schema import UNGRADED, SpecError
from mcp_farm.schema.scorecard import DIMENSIONS

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

ALPHA = 0.05
CONVERSATION_CELLS = ("conversation", "turn")
"""Cell kinds beyond the scorecard's dimensions: the conversation and turn pass rates."""
STATE_CELLS = ("state", "wrong_state", "other_path")
"""Cell kinds over the trials with state probes: state passes, wrong_state, other_path."""
CELLS = (*DIMENSIONS, *CONVERSATION_CELLS, *STATE_CELLS)
Better = Literal["higher", "lower", "neither"]
"""Which way a cell's rate improves: a pass rate up, a failure rate down, a flag neither."""
BETTER: dict[str, Better] = {"wrong_state": "lower", "other_path": "neither"}
Clusters = dict[str, tuple[int, int]]
CellKey = tuple[str, str]
"""(dimension, label): e.g. ("tool", "gemma/native read_file") or ("tier", "complex")."""


@dataclass(frozen=True)
class Side:
    sweep_id: str
    model: str | None = None
    prompt: str | None = None

    @classmethod
    def parse(cls, text_: str) -> Side:
        sweep, _, config = text_.partition("@")
        model, _, prompt = config.partition("/")
        if not sweep:
            raise SpecError("compare", text_, "give SWEEP or SWEEP@MODEL[/PROMPT]")
        return cls(sweep, model or None, prompt or None)

    @property
    def selects(self) -> bool:
        return self.model is not None

    def __str__(self) -> str:
        config = f"@{self.model}" + (f"/{self.prompt}" if self.prompt else "") if self.model else ""
        return self.sweep_id + config


@dataclass(frozen=True)
class Compared:
    dimension: str
    label: str
    diff: Difference
    p_adjusted: float
    first_try: tuple[float | None, float | None] = (None, None)
    """A's and B's first-try pass rates (shown beside the pass rates, not tested)."""
    better: Better = "higher"
    """Which way the cell's rate improves (BETTER): decides regression against improvement."""

    @property
    def alpha(self) -> float:
        """The corrected level of this cell's interval (1 − alpha is its confidence)."""
        return self.diff.alpha

    @property
    def significant(self) -> bool:
        """Whether the cell's interval, at its corrected level, excludes 0: the test the verdict
        reports (it agrees with `p_adjusted < ALPHA` up to the rounding of the bisection that
        finds the interval's ends)."""
        return self.diff.low > 0 or self.diff.high < 0

    @property
    def verdict(self) -> str:
        """`regression` or `improvement` when significant (`changed` for a rate that is neither
        better nor worse higher); `same` when the interval lies within ±EQUIVALENCE; otherwise
        `not significant`: too few trials to tell."""
        if self.significant:
            if self.better == "neither":
                return "changed"
            worse = self.diff.diff < 0 if self.better == "higher" else self.diff.diff > 0
            return "regression" if worse else "improvement"
        inside = self.diff.low >= -EQUIVALENCE and self.diff.high <= EQUIVALENCE
        return "same" if inside else "not significant"

    @property
    def interval_text(self) -> str:
        """The interval as the verdict read it, in points, at its level (`-100…-4.2 at 98.33%`):
        unclipped, and each end printed with as many decimals as keep it on its side of 0, so a
        printed interval excludes 0 exactly when the cell is significant."""
        level = f"{100 * (1 - self.alpha):.4g}%"
        return f"{points(self.diff.low)}…{points(self.diff.high)} at {level}"

    @property
    def verdict_text(self) -> str:
        """The verdict as a report shows it: an unresolved cell says its trials and about how
        many repetitions (per scenario of the cell) would resolve it."""
        if self.verdict != "not significant":
            return self.verdict
        d = self.diff
        sizes = f"n={d.a_n}" if d.a_n == d.b_n else f"n={d.a_n}/{d.b_n}"
        needed = trials_to_resolve(d, self.alpha)
        scenarios = max(d.clusters, 1)
        if needed is None:
            return f"not significant ({sizes}): a difference this small needs far more trials"
        repetitions = -(-needed // scenarios)
        return (
            f"not significant ({sizes}): about {repetitions} repetitions a side"
            + (f" of its {scenarios} scenarios" if scenarios > 1 else "")
            + " would resolve it"
        )


def points(rate: float) -> str:
    """A rate difference in signed points, rounded to whole points where that keeps its side of
    0 (`+3`, `-100`), else with the fewest decimals that do (`-0.04`); 0 is `+0`."""
    if rate != rate:  # NaN: a side without trials
        return "–"
    rate += 0.0  # -0.0 prints as 0
    for decimals in range(0, 10):
        text = f"{100 * rate:+.{decimals}f}"
        shown = float(text)
        if (shown > 0) == (rate > 0) and (shown < 0) == (rate < 0):
            return text
    return f"{100 * rate:+.2e}"


def _cells(
    engine: Engine, side: Side, by_config: bool
) -> tuple[dict[CellKey, Clusters], dict[CellKey, float | None]]:
    """Per cell, per scenario: (graded trials, passes) of one side; and per cell, the side's
    first-try pass rate."""
    counts = trial_counts(engine, side.sweep_id)
    if counts is None:
        raise SpecError("compare", side.sweep_id, "no such sweep in this database")
    cells: dict[CellKey, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    firsts: dict[CellKey, list[int]] = defaultdict(lambda: [0, 0, 0])
    matched = False
    for r in counts:
        if r.outcome in UNGRADED:
            continue
        if side.model and r.model_id != side.model:
            continue
        if side.prompt and r.prompt_id != side.prompt:
            continue
        matched = True
        config = f"{r.model_id}/{r.prompt_id}" if by_config else ""
        tools = json.loads(r.expected_tools)
        for dimension, _m, _p, key in row_keys(
            r.model_id, r.prompt_id, r.tier, r.scenario_id, r.paraphrased, tools
        ):
            label = (config or "all") if dimension == "config" else f"{config} {key}".strip()
            counts_ = cells[(dimension, label)][r.scenario_id]
            counts_[0] += r.n
            counts_[1] += r.n if r.outcome == "pass" else 0
            first = firsts[(dimension, label)]
            first[0] += r.n
            first[1] += int(r.first_tries or 0)
            first[2] += int(r.first_known or 0)
    if not matched:
        raise SpecError("compare", str(side), "no recorded trials match this side")
    clusters = {key: {s: (v[0], v[1]) for s, v in by.items()} for key, by in cells.items()}
    return clusters, {key: first_try_rate(*v) for key, v in firsts.items()}


def _conversation_cells(engine: Engine, side: Side, by_config: bool) -> dict[CellKey, Clusters]:
    """Per configuration (or `all`), per scenario: (conversations, passed) in the
    `conversation` cell and (turns graded, passed) in the `turn` cell of one side."""
    cells: dict[CellKey, Clusters] = defaultdict(dict)
    for (model, config, scenario), one in tally(conversation_rows(engine, side.sweep_id)).items():
        if (side.model and model != side.model) or (side.prompt and config != side.prompt):
            continue
        label = f"{model}/{config}" if by_config else "all"
        n, c = cells[("conversation", label)].get(scenario, (0, 0))
        cells[("conversation", label)][scenario] = (n + one.conversations, c + one.passed)
        n, c = cells[("turn", label)].get(scenario, (0, 0))
        cells[("turn", label)][scenario] = (n + one.turns, c + one.turns_passed)
    return cells


def _state_cells(engine: Engine, side: Side, by_config: bool) -> dict[CellKey, Clusters]:
    """Per configuration (or `all`), per scenario, over the graded trials that had probes:
    (probed, state passes) in the `state` cell, (probed, wrong_state) and (probed, other_path)
    in theirs. A scenario without probes is in none of them."""
    cells: dict[CellKey, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for r in trial_counts(engine, side.sweep_id) or ():
        probed = int(r.probed or 0)
        if r.outcome in UNGRADED or not probed:
            continue
        if (side.model and r.model_id != side.model) or (
            side.prompt and r.prompt_id != side.prompt
        ):
            continue
        label = f"{r.model_id}/{r.prompt_id}" if by_config else "all"
        wrong = probed if r.outcome == "wrong_state" else 0
        for kind, hits in (
            ("state", int(r.state_passes or 0)),
            ("wrong_state", wrong),
            ("other_path", int(r.other_paths or 0)),
        ):
            counts = cells[(kind, label)][r.scenario_id]
            counts[0] += probed
            counts[1] += hits
    return {key: {s: (v[0], v[1]) for s, v in by.items()} for key, by in cells.items()}


def compared(
    dimension: str,
    left: dict[CellKey, Clusters],
    right: dict[CellKey, Clusters],
    firsts: dict[CellKey, tuple[float | None, float | None]] | None = None,
) -> list[Compared]:
    """One kind of cell, every cell on both sides: each difference tested, Holm-adjusted within
    the kind, and its interval taken at the level Holm tested it at; the verdict reads that
    interval (`Compared.significant`)."""
    keys = sorted(left.keys() & right.keys())
    diffs = [compare_rates(left[key], right[key]) for key in keys]
    adjusted = holm([d.p for d in diffs])
    better = BETTER.get(dimension, "higher")
    found = []
    for key, d, p in zip(keys, diffs, adjusted, strict=True):
        # The interval at the level Holm tested this cell at, so that it agrees with the
        # verdict (a 95% interval beside a Holm-adjusted verdict can exclude 0 while the
        # cell is not significant).
        level = corrected_alpha(d.p, p, len(diffs), ALPHA)
        corrected = compare_rates(left[key], right[key], level)
        first = (firsts or {}).get(key, (None, None))
        found.append(Compared(dimension, key[1], corrected, p, first, better))
    return found


def compare(engine: Engine, a: Side, b: Side, dimensions: list[str]) -> list[Compared]:
    """Every cell present on both sides, regressions first, then improvements, then the rest."""
    by_config = not (a.selects or b.selects)
    (left, left_first), (right, right_first) = (
        _cells(engine, a, by_config),
        _cells(engine, b, by_config),
    )
    if any(d in CONVERSATION_CELLS for d in dimensions):
        left.update(_conversation_cells(engine, a, by_config))
        right.update(_conversation_cells(engine, b, by_config))
    if any(d in STATE_CELLS for d in dimensions):
        left.update(_state_cells(engine, a, by_config))
        right.update(_state_cells(engine, b, by_config))
    found: list[Compared] = []
    for dimension in dimensions:
        keys = sorted(k for k in left.keys() & right.keys() if k[0] == dimension)
        firsts = {k: (left_first.get(k), right_first.get(k)) for k in keys}
        found += compared(
            dimension, {k: left[k] for k in keys}, {k: right[k] for k in keys}, firsts
        )
    rank = {"regression": 0, "improvement": 1, "changed": 2, "not significant": 3, "same": 4}
    return sorted(found, key=lambda c: (rank[c.verdict], c.diff.diff, c.dimension, c.label))


def _users(engine: Engine, side: Side) -> set[str]:
    """The simulated-user identities the side's trials met."""
    with engine.connect() as conn:
        rows = user_identities(conn, side.sweep_id, False)
    return {
        r.user_identity
        for r in rows
        if (side.model is None or r.model_id == side.model)
        and (side.prompt is None or side.prompt in (r.config, r.config.split("+")[0]))
    }


def user_note(engine: Engine, a: Side, b: Side) -> str | None:
    """A warning when the sides' simulated-user trials met different users (or a side met
    several): their pass rates then pool or compare users as well as agents. None when no
    side has such trials, or both met the one same user."""
    left, right = _users(engine, a), _users(engine, b)
    if (not left and not right) or (left == right and len(left) == 1):
        return None
    return (
        f"simulated users differ: A met {_named(left)}; B met {_named(right)}. The cells with "
        "simulated-user scenarios compare the users as well as the agents."
    )


def _named(users: set[str]) -> str:
    return "; ".join(sorted(users)) or "none"
