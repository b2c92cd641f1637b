"""The tool-list curves and selection recall as table cells and sentences, shared by the
terminal, Markdown and HTML reports."""

from __future__ import annotations

import math

from mcp_farm.scheduler.report.cells import pct
from mcp_farm.schema.scorecard import Curve, Scorecard

CURVE_HEADS = [
    "tools",
    "n",
    "pass",
    "95% CI",
    "1st try",
    "wrong tool",
    "95% CI",
    "did not fit",
    "fitted",
    "band",
    "prompt tokens",
]


def _span(low: float | None, high: float | None) -> str:
    return "–" if low is None or high is None else f"{pct(low)}–{pct(high)}"


def curve_rows(card: Scorecard) -> list[list[str]]:
    """One row per tool-list level: model, prompt, descriptions, names, then CURVE_HEADS."""
    return [
        [
            c.model,
            c.prompt,
            c.descriptions,
            c.names,
            str(p.tool_count),
            str(p.n),
            pct(p.rate),
            _span(p.low, p.high),
            pct(p.first_rate),
            pct(p.wrong_rate),
            _span(p.wrong_low, p.wrong_high),
            str(p.context_overflow),
            pct(p.fitted),
            _span(p.fitted_low, p.fitted_high),
            tokens(p.prompt_tokens),
        ]
        for c in card.robustness
        for p in c.points
    ]


TOKENS_NOTE = (
    "Prompt tokens: the mean per trial that recorded any, all of its model calls together "
    "(a first call's own count is not recorded apart); tokens per tool: the least-squares "
    "slope of that mean against tool count."
)

POSITION_HEADS = ["decile", "n", "pass", "95% CI"]
POSITION_TITLE = "Pass rate by where the expected tool sat in the list (tenths, 1 first)"


def position_rows(card: Scorecard) -> list[list[str]]:
    """One row per curve and decile of the list the expected tool sat in: model, prompt,
    descriptions, names, then POSITION_HEADS (decile 1 is the list's first tenth)."""
    return [
        [
            d.model,
            d.prompt,
            d.descriptions,
            d.names,
            str(d.decile + 1),
            str(d.n),
            pct(d.rate),
            _span(d.low, d.high),
        ]
        for d in card.positions
    ]


def signed(value: float | None, digits: int = 2) -> str:
    """A signed number with at least `digits` significant digits and at least two decimals:
    -0.0031 (not -0.00), -1.25, +12.00; a dash for none."""
    if value is None:
        return "–"
    if value == 0 or not math.isfinite(value):
        return f"{value:+.2f}"
    decimals = max(2, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:+.{decimals}f}"


def tokens(value: float | None) -> str:
    """Mean prompt tokens, rounded to a whole token; a dash where none were recorded."""
    return "–" if value is None else f"{value:,.0f}"


def curve_note(c: Curve) -> str:
    """The slope and the threshold level of one curve, in a sentence."""
    name = f"{c.model} / {c.prompt} (descriptions {c.descriptions}, names {c.names})"
    if c.slope is None:
        slope = "one tool count measured, no slope"
    else:
        slope = (
            f"slope {signed(c.slope)} log-odds per doubling of tools "
            f"(95% CI {signed(c.slope_low)} to {signed(c.slope_high)})"
        )
    below = (
        f"first below {pct(c.threshold)} at {c.below_at} tools"
        if c.below_at is not None
        else f"never below {pct(c.threshold)}"
    )
    crossing = f"; the fit crosses it at about {c.crossing:.0f} tools" if c.crossing else ""
    cost = (
        f"; {c.tokens_per_tool:.3g} prompt tokens per tool" if c.tokens_per_tool is not None else ""
    )
    return f"{name}: {slope}; {below}{crossing}{cost}."


SELECTION_HEADS = [
    "method",
    "k",
    "trials",
    "held",
    "95% CI",
    "messages held",
    "95% CI",
    "failed",
    "selector missed",
    "model failed (tools shown)",
    "pass when held",
]

SELECTION_NOTE = (
    "Held: every user message's selection held all the tools it called for (a simulated "
    "user's message: the scenario's tools not called yet). A failed trial is the selector's "
    "when some selection lacked such a tool, the model's when every selection held them. "
    "Intervals are Wilson 95%; messages of one trial are not independent."
)


RANKING_HEADS = [
    "method",
    "k",
    "selections",
    "tie decided",
    "trials with a tie",
    "recall@1",
    "recall@3",
    "recall@5",
    "recall@10",
    "recall@k",
    "time p50",
    "time p90",
]

RANKING_NOTE = (
    "Tie decided: tools scored the same as the last one shown, so the trial's seed chose which "
    "were shown. Recall@n: the mean share of a message's tools ranked within the first n "
    "(recall@k: the configured k, what the model was shown), over messages that called for a "
    "tool. Time: one selection's, its own latency, outside the scenario's clock and the "
    "trials' latency."
)


def _secs(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g} s"


def ranking_rows(card: Scorecard) -> list[list[str]]:
    """One row per configuration that selects tools: model, prompt, then RANKING_HEADS."""
    return [
        [
            s.model,
            s.prompt,
            s.method,
            str(s.k),
            str(s.selections),
            f"{s.tied} ({pct(s.tied / s.selections if s.selections else None)})",
            str(s.tied_trials),
            pct(s.recall_at_1),
            pct(s.recall_at_3),
            pct(s.recall_at_5),
            pct(s.recall_at_10),
            pct(s.recall_at_k),
            _secs(s.seconds_p50),
            _secs(s.seconds_p90),
        ]
        for s in card.selection
    ]


def selection_rows(card: Scorecard) -> list[list[str]]:
    """One row per configuration that selects tools: model, prompt, then SELECTION_HEADS."""
    return [
        [
            s.model,
            s.prompt,
            s.method,
            str(s.k),
            str(s.trials),
            pct(s.rate),
            _span(s.low, s.high),
            f"{pct(s.message_rate)} of {s.messages}",
            _span(s.message_low, s.message_high),
            str(s.failures),
            str(s.selector_missed),
            str(s.model_failed),
            pct(s.held_pass_rate),
        ]
        for s in card.selection
    ]
