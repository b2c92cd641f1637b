"""Scorecards as terminal tables a person can read at 100 columns."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mcp_farm.scheduler.report.cells import (
    CONVERSATION_HEADS,
    NOT_MEASURED,
    USER_HEADS,
    VARIANCE_HEADS,
    VARIANCE_NOTE,
    cassette_note,
    conversation_cells,
    dash_note,
    harness_note,
    interval,
    pass_k,
    pct,
    recovery_cell,
    secs,
    shows_recovery,
    shows_state,
    state_cell,
    user_cells,
    user_notes,
    variance_rows,
)
from mcp_farm.scheduler.report.robustness_cells import (
    CURVE_HEADS,
    POSITION_HEADS,
    POSITION_TITLE,
    RANKING_HEADS,
    RANKING_NOTE,
    SELECTION_HEADS,
    SELECTION_NOTE,
    TOKENS_NOTE,
    curve_note,
    curve_rows,
    position_rows,
    ranking_rows,
    selection_rows,
)
from mcp_farm.scheduler.report.terminal.answers import print_answers
from mcp_farm.scheduler.report.visible import visible_fields
from mcp_farm.scheduler.scorecard.build import outcome_columns
from mcp_farm.schema.scorecard import (
    ConfigExtras,
    Latency,
    Scorecard,
)


def _table(title: str, heads: list[str], right: list[str]) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold", pad_edge=False)
    for head in heads:
        table.add_column(head)
    for head in right:
        table.add_column(head, justify="right")
    return table


def _latency(lat: Latency) -> list[str]:
    return [secs(lat.p50), secs(lat.p95), secs(lat.p99)]


def _rate_table(card: Scorecard, dimension: str, title: str, head: str) -> Table:
    heads = ["model", "prompt"] + ([head] if head else [])
    recovery = shows_recovery(card, dimension)
    state = shows_state(card, dimension)
    right = ["n", "pass", "1st try", *(["recovered"] if recovery else [])]
    right += ["state"] if state else []
    table = _table(title, heads, [*right, "95% CI", "pass^k", "p50", "p95", "p99"])
    for row in card.of(dimension):  # type: ignore[arg-type]
        table.add_row(
            row.model,
            row.prompt,
            *([row.key] if head else []),
            str(row.n),
            pct(row.rate),
            pct(row.first_rate),
            *([recovery_cell(row)] if recovery else []),
            *([state_cell(row)] if state else []),
            interval(row),
            f"{pct(row.pass_hat_k)} k={row.k}" if row.k > 1 else "–",
            *_latency(row.latency),
        )
    return table


def print_scorecard(card: Scorecard, console: Console) -> None:
    """The card as tables; every name and note in it with what would hide shown as escapes
    (scheduler/report/visible.py)."""
    card = visible_fields(card)
    console.print(f"\n[bold]Scorecard[/bold] {card.sweep_id}: {card.done}/{card.total} trials done")
    if harness := harness_note(card):
        console.print(f"[bold red]{escape(harness)}[/bold red]", highlight=False)
    console.print(_rate_table(card, "config", "Pass rate per model × prompt config", ""))
    speed = _table(
        "Speed and tokens",
        ["model", "prompt"],
        ["pass@k", "TTFT p50", "tok/s", "tokens in", "tokens out"],
    )
    rows = {(r.model, r.prompt): r for r in card.of("config")}
    for extra in card.extras:
        row = rows.get((extra.model, extra.prompt))
        speed.add_row(
            extra.model,
            extra.prompt,
            pass_k(row.pass_at_k, row.k) if row else "–",
            *_speed_cells(extra),
        )
    console.print(speed)
    console.print(
        _rate_table(card, "tool", "Per tool the scenario expects (latency of its calls)", "tool")
    )
    console.print(_rate_table(card, "tier", "Per tier", "tier"))
    console.print(_rate_table(card, "phrasing", "Verbatim vs paraphrased prompts", "wording"))
    outcomes = outcome_columns(card)
    modes = _table(
        "Outcomes (failure modes)", ["model", "prompt"], [o.replace("_", " ") for o in outcomes]
    )
    for row in card.of("config"):
        modes.add_row(row.model, row.prompt, *(str(row.outcomes.get(o, 0)) for o in outcomes))
    console.print(modes)
    if card.conversations:
        talks = _table(
            "Conversations (graded turn by turn)", ["model", "prompt"], CONVERSATION_HEADS
        )
        for talk in card.conversations:
            talks.add_row(talk.model, talk.prompt, *conversation_cells(talk))
        console.print(talks)
    if card.simulated_users:
        users = _table("Simulated users (docs/simulated-user.md)", ["model", "prompt"], USER_HEADS)
        for u in card.simulated_users:
            users.add_row(escape(u.model), escape(u.prompt), *user_cells(u))
        console.print(users)
        for line in user_notes(card):
            console.print(f"[dim]{escape(line)}[/dim]", highlight=False)
        if split_rows := variance_rows(card):
            split = _table(
                "Simulated users: agent × user variance", ["model", "prompt"], VARIANCE_HEADS
            )
            for cells in split_rows:
                split.add_row(*(escape(cell) for cell in cells))
            console.print(split)
            console.print(f"[dim]{VARIANCE_NOTE}[/dim]", highlight=False)
    if card.robustness:
        heads = ["model", "prompt", "descriptions", "names"]
        curves = _table("Pass rate against tool count (docs/robustness.md)", heads, CURVE_HEADS)
        for cells in curve_rows(card):
            curves.add_row(*(escape(cell) for cell in cells))
        console.print(curves)
        for curve in card.robustness:
            console.print(f"[dim]{escape(curve_note(curve))}[/dim]", highlight=False)
        if any(p.prompt_tokens is not None for c in card.robustness for p in c.points):
            console.print(f"[dim]{escape(TOKENS_NOTE)}[/dim]", highlight=False)
    if card.positions:
        heads = ["model", "prompt", "descriptions", "names"]
        placed = _table(POSITION_TITLE, heads, POSITION_HEADS)
        for cells in position_rows(card):
            placed.add_row(*(escape(cell) for cell in cells))
        console.print(placed)
    if card.selection:
        title = "Tool selection before the model (docs/robustness.md)"
        chosen = _table(title, ["model", "prompt"], SELECTION_HEADS)
        for cells in selection_rows(card):
            chosen.add_row(*(escape(cell) for cell in cells))
        console.print(chosen)
        console.print(f"[dim]{escape(SELECTION_NOTE)}[/dim]", highlight=False)
        title = "Tool selection: ranks, ties and time"
        ranked = _table(title, ["model", "prompt"], RANKING_HEADS)
        for cells in ranking_rows(card):
            ranked.add_row(*(escape(cell) for cell in cells))
        console.print(ranked)
        console.print(f"[dim]{escape(RANKING_NOTE)}[/dim]", highlight=False)
    for line in timeout_lines(card):
        console.print(f"[dim]{escape(line)}[/dim]", highlight=False)
    if cassette := cassette_note(card):
        console.print(f"[yellow]{escape(cassette)}[/yellow]", highlight=False)
    if card.tool_calls:
        calls = _table(
            "Tool calls as executed (MCP latency)",
            ["model", "prompt", "tool"],
            ["calls", "ok", "p50", "p95", "p99"],
        )
        for c in card.tool_calls:
            calls.add_row(
                c.model,
                c.prompt,
                c.tool,
                str(c.calls),
                pct(c.ok / c.calls if c.calls else None),
                *_latency(c.latency),
            )
        console.print(calls)
    note = dash_note(card, speed=True)
    if note:
        console.print(f"[dim]{note}[/dim]", highlight=False)
    if card.answers is not None:
        print_answers(card.answers, console)


def _speed_cells(extra: ConfigExtras) -> list[str]:
    """TTFT, tok/s and tokens of a config: "not measured" where none of its trials measured
    its tokens (an agent whose model calls did not pass the farm), never 0."""
    if extra.tokens_prompt is None or extra.tokens_completion is None:
        return [NOT_MEASURED] * 4
    return [
        secs(extra.first_token.p50),
        "–" if extra.tokens_per_s is None else f"{extra.tokens_per_s:.1f}",
        f"{extra.tokens_prompt:,}",
        f"{extra.tokens_completion:,}",
    ]


LIMITS = {
    "scenario_clock": "by the scenario's clock (tools, servers, setup)",
    "model_reply": "by the model's per-reply limit",
}


def timeout_lines(card: Scorecard) -> list[str]:
    """Which limit ended the timed-out trials, per model × prompt config that had any."""
    return [
        f"timeouts, {extra.model} × {extra.prompt}: "
        + ", ".join(f"{n} {LIMITS.get(limit, limit)}" for limit, n in extra.timeouts.items())
        for extra in card.extras
        if extra.timeouts
    ]
