"""The answer-quality part of a scorecard as terminal tables: fairness and adoption side by
side (never combined), grounding buckets, tokens by phase, and the judge's variance."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from scheduler.render import pct, secs
from schema.scorecard import AnswerQuality, AnswerRow, JudgeVariance

if TYPE_CHECKING:
    from scheduler.compare_answers import AnswerComparison


def _table(title: str, left: list[str], right: list[str]) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold", pad_edge=False)
    for head in left:
        table.add_column(head)
    for head in right:
        table.add_column(head, justify="right")
    return table


def num(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def fairness_cell(row: AnswerRow) -> str:
    if row.fairness_low is None or row.fairness_high is None:
        return pct(row.fairness)
    return f"{pct(row.fairness)} ({pct(row.fairness_low)}–{pct(row.fairness_high)})"


def adoption_cell(row: AnswerRow) -> str:
    return "0 (structural)" if row.baseline else pct(row.adoption)


def unverified_note(answers: AnswerQuality) -> str | None:
    """Why the ranking cannot be trusted yet, when the anchor gate has not passed."""
    if answers.verified:
        return None
    if not answers.judges:
        return "no judge scored this sweep: fairness has no judge-quality part"
    names = ", ".join(f"{j.judge} with rubric {j.rubric_id}" for j in answers.judges)
    return f"ranking unverified: the anchor gate has not passed for {names} (farm anchors verify)"


def print_answers(answers: AnswerQuality, console: Console) -> None:
    """Every answer-quality table of one scorecard."""
    console.print(
        f"\n[bold]Answer quality[/bold] (scoring {answers.scoring_id}, {answers.kind}; "
        f"judge {answers.judge or 'none'}). Fairness and adoption are separate layers."
    )
    ranked = {(r.model, r.prompt): r for r in answers.ranking}
    layers = _table(
        "Fairness vs adoption per tool set (scenario-level means)",
        ["model", "config"],
        [
            *("n", "fairness (95% CI)", "Δ baseline", "keywords", "judge", "grounding"),
            *("effic.", "adoption", "fluency", "discover"),
        ],
    )
    for row in answers.of("config"):
        delta = ranked[(row.model, row.prompt)].vs_baseline
        layers.add_row(
            row.model,
            row.prompt + (" (baseline)" if row.baseline else ""),
            str(row.n),
            fairness_cell(row),
            "–" if delta is None else f"{100 * delta:+.1f}pt",
            pct(row.keyword_coverage),
            pct(row.judge_quality),
            pct(row.grounding_rate),
            pct(row.efficiency),
            adoption_cell(row),
            pct(row.tool_fluency),
            pct(row.discoverability),
        )
    console.print(layers)
    console.print(_grounding_and_tokens(answers))
    if answers.judges:
        console.print(judge_table(answers.judges))
    note = unverified_note(answers)
    if note:
        console.print(f"[yellow]{note}[/yellow]")


def _grounding_and_tokens(answers: AnswerQuality) -> Table:
    table = _table(
        "Citation grounding at the pinned commit, tokens by phase, time per trial",
        ["model", "config"],
        [
            *("grounded", "unresolved", "halluc.", "reasoning", "tool I/O"),
            *("verification", "model s", "judge s"),
        ],
    )
    for row in answers.of("config"):
        table.add_row(
            row.model,
            row.prompt,
            str(row.grounded),
            str(row.unresolved),
            str(row.hallucinated),
            _tokens(row.tokens_reasoning, "reasoning" in row.estimated),
            _tokens(row.tokens_tool_io, "tool_io" in row.estimated),
            _tokens(row.tokens_verification, "verification" in row.estimated),
            secs(row.model_s),
            secs(row.judge_s),
        )
    table.caption = "~ marks an estimate (characters / 4); judging is not part of model time"
    return table


def _tokens(n: int, estimated: bool) -> str:
    return f"~{n:,}" if estimated else f"{n:,}"


def judge_table(judges: list[JudgeVariance]) -> Table:
    table = _table(
        "Judge variance across duplicate runs (scores 0..1)",
        ["judge", "rubric"],
        [
            *("trials×runs", "σ criterion", "σ step", "σ scenario", "ICC(1)"),
            *("resolves Δ≥", "noise floor", "anchors"),
        ],
    )
    for j in judges:
        rho = f" ρ={j.anchor_rho:.2f}" if j.anchor_rho is not None else ""
        table.add_row(
            j.judge,
            j.rubric_id,
            f"{j.trials}×{j.runs}",
            num(j.sigma_criterion),
            num(j.sigma_step),
            num(j.sigma_scenario),
            num(j.icc1, 2),
            num(j.resolution),
            num(j.noise_floor, 2),
            j.anchors + rho,
        )
    table.caption = (
        "rankings use scenario-level means; criterion differences below the floor are noise"
    )
    return table


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
