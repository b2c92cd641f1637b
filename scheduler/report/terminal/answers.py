"""The answer-quality part of a scorecard as terminal tables (the same tables the Markdown and
HTML reports show, from scheduler/report/answer_tables.py), and answer-quality comparisons."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from mcp_farm.scheduler.report.answer_tables import (
    AnswerTable,
    answer_tables,
    unverified_note,
)
from mcp_farm.scheduler.report.cells import (
    num,
    pct,
)
from mcp_farm.schema.scorecard import AnswerQuality

if TYPE_CHECKING:
    from mcp_farm.scheduler.scorecard.compare_answers import AnswerComparison


def _table(title: str, left: list[str], right: list[str]) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold", pad_edge=False)
    for head in left:
        table.add_column(head)
    for head in right:
        table.add_column(head, justify="right")
    return table


def _rich(found: AnswerTable) -> Table:
    """The first two columns (model, configuration or judge, rubric) are names; the rest are
    numbers."""
    table = _table(found.title, found.heads[:2], found.heads[2:])
    for row in found.rows:
        table.add_row(*row)
    table.caption = found.caption
    return table


def print_answers(answers: AnswerQuality, console: Console) -> None:
    """Every answer-quality table of one scorecard."""
    console.print(
        f"\n[bold]Answer quality[/bold] (scoring {answers.scoring_id}, {answers.kind}; "
        f"judge {answers.judge or 'none'}). Fairness and adoption are separate layers."
    )
    for found in answer_tables(answers):
        console.print(_rich(found))
    note = unverified_note(answers)
    if note:
        console.print(f"[yellow]{note}[/yellow]")


def print_answer_comparison(found: AnswerComparison, a: str, b: str, console: Console) -> None:
    """Fairness and adoption differences (scenario-level, paired), then the criteria."""
    table = _table(
        f"Answer quality: {b} vs {a} (scenario-level means, paired t)",
        ["layer"],
        ["scenarios", "A", "B", "Δ", "95% CI", "p"],
    )
    for name, d in (("fairness", found.fairness), ("adoption", found.adoption)):
        table.add_row(
            name,
            str(d.n),
            pct(d.a_mean),
            pct(d.b_mean),
            f"{100 * d.diff:+.1f}pt",
            f"{100 * d.low:+.1f}…{100 * d.high:+.1f}",
            num(d.p),
        )
    console.print(table)
    criteria = _table(
        f"Judge criteria (diagnostic only; |Δ| < {found.noise_floor:g} is noise)",
        ["criterion"],
        ["A", "B", "Δ", "verdict"],
    )
    for c in found.criteria:
        criteria.add_row(c.criterion, num(c.a), num(c.b), f"{c.diff:+.3f}", c.verdict)
    console.print(criteria)
