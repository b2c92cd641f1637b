"""Cell formatters every report medium shares: percentages, durations, intervals, plain numbers,
and the footnote that says why a cell shows `–`."""

from __future__ import annotations

from mcp_farm.schema.scorecard import (
    ConfigExtras,
    Conversations,
    Row,
    Scorecard,
    SimulatedUsers,
    UserVariance,
)

NOT_MEASURED = "not measured"
"""What a cell says for what nobody measured (an agent's tokens and time in the model, where
its model calls did not pass the farm): never 0."""


def measured(extra: ConfigExtras) -> bool:
    """Whether some trial of the config measured its tokens (the farm's own loop always does;
    an agent does only where its model calls passed the farm)."""
    return extra.tokens_prompt is not None


def recovery_cell(row: Row) -> str:
    """A row's recovery after an error result: `recovered/errored (rate)`, or `–` when no
    call of its trials failed."""
    if not row.errored:
        return "–"
    return f"{row.recovered}/{row.errored} ({pct(row.recovery_rate)})"


def shows_recovery(card: Scorecard, dimension: str) -> bool:
    """Whether a rate table has a `recovered` column: always per config, and per tool, tier,
    scenario or wording when some call of that table's trials failed."""
    return dimension == "config" or any(
        r.errored
        for r in card.of(dimension)  # type: ignore[arg-type]
    )


def state_cell(row: Row) -> str:
    """A row's state beside its calls (docs/state.md): `passes/probed (rate)`, and how many
    trials reached the right state by another path; `–` when no trial had state probes. The
    other disagreement, `wrong_state`, is an outcome and counted with the outcomes."""
    if not row.probed:
        return "–"
    other = f", other path {row.other_path}" if row.other_path else ""
    return f"{row.state_passes}/{row.probed} ({pct(row.state_rate)}){other}"


def shows_state(card: Scorecard, dimension: str) -> bool:
    """Whether a rate table has a `state` column: when some trial of it had state probes."""
    return any(r.probed for r in card.of(dimension))  # type: ignore[arg-type]


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def secs(x: float | None) -> str:
    if x is None:
        return "–"
    if x < 1:
        return f"{1000 * x:.0f}ms"
    return f"{x:.2f}s" if x < 10 else f"{x:.1f}s"


def num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def pass_k(value: float | None, k: int) -> str:
    """A pass^k or pass@k cell: `–` below two repetitions, where it says nothing new."""
    return pct(value) if k > 1 else "–"


def interval(row: Row) -> str:
    return f"{pct(row.low)}–{pct(row.high)}"


def dash_note(card: Scorecard, *, speed: bool) -> str | None:
    """The footnote that says why cells show `–`, naming only the reasons that apply here;
    None when no such cell is shown. `speed`: the card's TTFT and tok/s columns are shown."""
    reasons = []
    if any(row.k < 2 for row in card.rows) or any(c.k < 2 for c in card.conversations):
        reasons.append("pass^k and pass@k need k ≥ 2 repetitions of each scenario in the row")
    timed = [x for x in card.extras if measured(x)]  # the others say "not measured"
    if speed and any(x.first_token.p50 is None for x in timed):
        reasons.append(
            "TTFT needs an endpoint that reports its first token "
            "(an openai model with `stream: true`)"
        )
    if speed and any(x.tokens_per_s is None for x in timed):
        reasons.append("tok/s needs token counts and model time from the endpoint")
    if not reasons:
        return None
    return "– not measured: " + "; ".join(reasons) + "."


def harness_note(card: Scorecard) -> str:
    """What a report says, in red, when trials hit a bug in the farm; empty when none did."""
    n = card.harness_errors()
    if not n:
        return ""
    return (
        f"{n} trial(s) hit a bug in the farm itself (outcome harness_error): they are in no "
        "rate and were not retried. Each trial's detail holds the traceback; please report it."
    )


def cassette_note(card: Scorecard) -> str:
    """What a report says about trials that called a replayed server off its cassette, per
    model × prompt config that had any; empty when none did."""
    left = [f"{x.model} × {x.prompt}: {x.left_cassette}" for x in card.extras if x.left_cassette]
    if not left:
        return ""
    how = (
        "left out of every rate, outcome count and latency (`left_cassette: exclude`)"
        if card.left_cassette == "exclude"
        else "counted like any trial (a sweep's `left_cassette: exclude` leaves them out)"
    )
    return (
        "trials that left their cassette (a call the recording never made, answered with a "
        f"tool error): {'; '.join(left)}. They are {how}."
    )


CONVERSATION_HEADS = [
    "conversations",
    "conversation pass",
    "turn pass",
    "pass^k conv / turn",
    "first failing turn",
]
"""Headings of the conversation table (model and prompt before them) in every medium."""


def conversation_cells(c: Conversations) -> list[str]:
    """One config's conversation row: counts, the two pass rates, pass^k of conversations and
    of turns (`–` below k = 2), and the histogram of the first failing turn (`turn 1: 3,
    turn 2: 1`; `–` when none failed)."""
    firsts = ", ".join(f"turn {turn}: {n}" for turn, n in c.first_failing_turn.items())
    hats = f"{pct(c.pass_hat_k)} / {pct(c.turn_pass_hat_k)} (k={c.k})" if c.k > 1 else "–"
    return [
        str(c.conversations),
        f"{c.passed}/{c.conversations} ({pct(c.rate)})",
        f"{c.turns_passed}/{c.turns} ({pct(c.turn_rate)})",
        hats,
        firsts or "–",
    ]


USER_HEADS = ["trials", "pass (all)", "pass (no user error)", "failed by user", "by agent"]
"""Headings of the simulated-user table (model and prompt before them) in every medium."""


def user_cells(u: SimulatedUsers) -> list[str]:
    """One config's simulated-user row: the pass rate over all its trials and over those in
    which the user invented no fact, side by side, and the failures by whose mistake."""
    return [
        str(u.trials),
        f"{u.passed}/{u.trials} ({pct(u.rate)})",
        f"{u.clean_passed}/{u.clean} ({pct(u.clean_rate)})",
        str(u.user_failures),
        str(u.agent_failures),
    ]


VARIANCE_HEADS = [
    "scenarios",
    "repetitions × user seeds",
    "σ² agent",
    "σ² user",
    "σ² interaction + residual",
    "user ICC",
    "pass rate ± (95%)",
]
"""Headings of the agent × user variance table (model and prompt before them)."""


def variance_cells(v: UserVariance) -> list[str]:
    """One config's variance split: the components of a trial's pass/fail outcome, the user's
    ICC and the half-width of the config pass rate's 95% interval they give."""
    return [
        str(v.scenarios),
        f"{v.repetitions} × {v.seeds}",
        *(
            f"{value:.4f}{' (0: clamped)' if name in v.clamped else ''}"
            for name, value in (("agent", v.agent), ("user", v.user), ("rest", v.rest))
        ),
        "–" if v.user_icc is None else f"{v.user_icc:.2f}",
        f"± {v.resolution * 100:.1f} pts",
    ]


def variance_rows(card: Scorecard) -> list[list[str]]:
    """Model, prompt and the variance cells of each config whose sweep crossed repetitions
    with user seeds."""
    return [
        [u.model, u.prompt, *variance_cells(u.variance)]
        for u in card.simulated_users
        if u.variance is not None
    ]


VARIANCE_NOTE = (
    "Variance of one trial's pass/fail within a scenario, split by ANOVA expected mean squares "
    "over agent repetitions crossed with user seeds (one trial per cell, so the interaction "
    "is pooled with the residual; a negative estimate is shown as 0). User ICC: the user's "
    "share of it. Plan seeds and repetitions with `farm users plan`."
)


def user_notes(card: Scorecard) -> list[str]:
    """Which simulated user each config met; a config that met several says its rates pool
    them."""
    notes = []
    for u in card.simulated_users:
        if len(u.users) > 1:
            notes.append(
                f"{u.model} × {u.prompt}: the rates pool {len(u.users)} different simulated "
                f"users: {'; '.join(u.users)}"
            )
        else:
            notes.append(f"{u.model} × {u.prompt}: simulated user {''.join(u.users)}")
    return notes
