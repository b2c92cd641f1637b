"""Scorecards as terminal tables a person can read at 100 columns."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

from scheduler.scorecard import Cell, Scorecard, outcome_columns


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.0f}%"


def _secs(x: float) -> str:
    return "–" if math.isnan(x) else (f"{x:.2f}s" if x < 10 else f"{x:.1f}s")


def _rate_table(title: str, heads: list[str], cells: list[Cell]) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold")
    for head in heads:
        table.add_column(head)
    for col in ("n", "pass", "95% CI", "p50", "p95", "p99"):
        table.add_column(col, justify="right")
    for c in cells:
        table.add_row(
            *c.key,
            str(c.n),
            _pct(c.rate),
            f"{_pct(c.low)}–{_pct(c.high)}",
            _secs(c.p50),
            _secs(c.p95),
            _secs(c.p99),
        )
    return table


def print_scorecard(card: Scorecard, console: Console) -> None:
    console.print(f"\n[bold]Scorecard[/bold] {card.sweep_id}: {card.done}/{card.total} trials done")
    console.print(
        _rate_table(
            "Pass rate per model × prompt config (trial latency)", ["model", "prompt"], card.configs
        )
    )
    console.print(
        _rate_table("Per tool the scenario expects", ["model", "prompt", "tool"], card.by_tool)
    )
    console.print(_rate_table("Per tier", ["model", "prompt", "tier"], card.by_tier))
    outcomes = outcome_columns(card)
    modes = Table(title="Outcomes (failure modes)", title_justify="left", header_style="bold")
    modes.add_column("model")
    modes.add_column("prompt")
    for o in outcomes:
        modes.add_column(o.replace("_", " "), justify="right")
    for (model, prompt), counts in sorted(card.failures.items()):
        modes.add_row(model, prompt, *(str(counts.get(o, 0)) for o in outcomes))
    console.print(modes)
    if card.tool_latency:
        table = Table(
            title="Tool calls as executed (MCP latency)", title_justify="left", header_style="bold"
        )
        for col in ("tool", "calls", "ok", "p50", "p95", "p99"):
            table.add_column(col, justify="left" if col == "tool" else "right")
        for c in card.tool_latency:
            table.add_row(
                c.key[0],
                str(c.n),
                _pct(c.rate),
                f"{1000 * c.p50:.0f}ms",
                f"{1000 * c.p95:.0f}ms",
                f"{1000 * c.p99:.0f}ms",
            )
        console.print(table)
