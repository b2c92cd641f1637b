"""The explorer in a terminal: a page of trials as a table, one trial as lines. Rich styles them
on a terminal and prints plain lines anywhere else; every stored text is printed as text, never
read as markup, as a terminal control sequence or as a direction override."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from mcp_farm.scheduler.report.cells import secs
from mcp_farm.scheduler.report.visible import visible
from mcp_farm.scheduler.view.transcript import (
    Entry,
    entries,
    pins,
    selection_lines,
    state_summary,
    user_lines,
    verdict,
)
from mcp_farm.scheduler.view.trial_page import (
    SUMMARY,
    agent_streams,
    answer_tokens,
    summary_value,
)

if TYPE_CHECKING:
    from rich.console import Console

    from mcp_farm.scheduler.view.queries import TrialPage, TrialRecord


def shown(text: str) -> str:
    """Stored text for a Rich line: control, direction and invisible characters shown as
    escapes (scheduler/report/visible.py), markup taken literally."""
    return escape(visible(text))


OUTCOME_STYLE = {"pass": "green", "infra_error": "yellow", "harness_error": "yellow"}


def print_trials(page: TrialPage, out: Console) -> None:
    """A page of trials: full ids (for `farm trial show`), configuration, outcome, detail. Off a
    terminal, one tab-separated line per trial, so the output greps and cuts cleanly."""
    if not out.is_terminal:
        for t in page.rows:
            fields = (
                t.trial_id,
                t.model_id,
                t.config,
                t.scenario_id,
                f"{t.repetition}{'p' if t.variant else ''}",
                t.outcome or t.status,
                secs(t.latency_s),
                " ".join((t.detail or "").split())[:200],
            )
            line = "\t".join(visible(str(f)) for f in fields)
            # No emoji codes either: `:m:` in an id is text, not Ⓜ.
            out.print(line, markup=False, highlight=False, emoji=False, soft_wrap=True)
        _count(page, out)
        return
    table = Table(header_style="bold", pad_edge=False, box=None)
    for head in ("trial", "model", "config", "scenario", "rep", "outcome", "latency", "detail"):
        table.add_column(head, overflow="fold", no_wrap=head == "trial")
    for t in page.rows:
        outcome = t.outcome or t.status
        style = OUTCOME_STYLE.get(outcome, "red" if t.outcome else "dim")
        table.add_row(
            shown(t.trial_id),
            shown(t.model_id),
            shown(t.config),
            shown(t.scenario_id),
            f"{t.repetition}{'p' if t.variant else ''}",
            f"[{style}]{shown(outcome)}[/{style}]",
            secs(t.latency_s),
            shown((t.detail or "")[:120]),
        )
    out.print(table)
    _count(page, out)


def _count(page: TrialPage, out: Console) -> None:
    said = page.summary()
    if page.has_next and page.rows:
        # The next page starts after this one's last trial: as fast at page 20,000 as at 2.
        said += f"; next: --page {page.page + 1} --after {page.rows[-1].trial_id}"
    out.print(visible(said), markup=False, highlight=False, emoji=False, soft_wrap=True)


def _entry_lines(item: Entry) -> list[str]:
    if item.kind in ("user", "assistant", "system"):
        return [f"[bold]{item.kind}:[/bold] {shown(item.text)}"]
    if item.kind == "undecoded":
        return [f"[bold red]assistant (undecodable call):[/bold red] {shown(item.text)}"]
    if item.kind == "elicit":
        return [
            f"  [bold]elicitation[/bold] from {shown(item.server or '?')}: {shown(item.text)}",
            f"    schema: {shown(item.arguments)}",
            f"    user: {shown(item.result or '')}",
        ]
    number = "setup" if item.kind == "setup" else f"call #{item.index}"
    where = f"{item.server}." if item.server else ""
    state = "[green]ok[/green]" if item.ok else "[red]error[/red]"
    lines = [
        f"[bold]{number}[/bold] {shown(where + item.text)}({shown(item.arguments)}) {state}"
        f" {secs(item.latency_s)}"
    ]
    if item.error:
        lines.append(f"  [red]error:[/red] {shown(item.error)}")
    if item.result is not None:
        lines.append(f"  → {shown(item.result)}")
    if item.cut:
        lines.append("  [yellow](result cut at the server's result_chars)[/yellow]")
    return lines


def print_trial(record: TrialRecord, out: Console) -> None:
    """One trial: its summary, the grader's verdict step by step, the transcript, answer
    scores and judge verdicts, the provenance."""
    t = record.trial

    def say(line: str) -> None:
        # Whole lines, never folded at the width: a transcript is read, grepped and copied.
        out.print(line, highlight=False, soft_wrap=True)

    say(f"[bold]trial {t.trial_id}[/bold]")
    for name, column in SUMMARY:
        say(f"  {name}: {shown(summary_value(t, column))}")
    found = verdict(t, record.calls)
    say(f"[bold]verdict:[/bold] {shown(found.outcome)} {shown(found.detail)}")
    for s in found.steps:
        flag = " [red]← named in the verdict[/red]" if s.named and not s.problem else ""
        if s.problem:
            flag = f" [red]← {shown(s.problem)}[/red]"
        calls = shown(", ".join(s.calls) or "no call")
        turn = "" if s.turn is None else f"turn {s.turn} "
        say(f"  {turn}step {s.number} {shown(s.label)} {shown(s.params)}: {calls}{flag}")
    if found.note:
        say(f"  {shown(found.note)}")
    state_line, probes = state_summary(t)
    if state_line:
        say(f"[bold]state:[/bold] {shown(state_line)}")
    for when, label, expected, found_value, ok in probes:
        say(
            f"  {shown(when)} {shown(label)}: expected {shown(expected)}, found {shown(found_value)}: {shown(ok)}"
        )
    selection = selection_lines(t)
    if selection:
        say("[bold]tool selection:[/bold]")
    for line in selection:
        say(f"  {shown(line)}")
    user = user_lines(t)
    if user:
        say("[bold]simulated user:[/bold]")
    for line in user:
        say(f"  {shown(line)}")
    say("[bold]transcript:[/bold]")
    for item in entries(t, record.calls):
        for line in _entry_lines(item):
            say(line)
    if t.final_answer:
        say(f"[bold]final answer:[/bold] {shown(t.final_answer)}")
    for name, text in agent_streams(t) or []:
        say(f"[bold]agent {shown(name)}:[/bold]")
        for line in text.splitlines():
            say(f"  {shown(line)}")
    for a in record.answers:
        say(
            f"answer score ({shown(a.scoring_id[:12])}): fairness {a.fairness:.3f}, adoption "
            f"{a.adoption:.3f}, grounded {a.grounded}, unresolved {a.unresolved}, "
            f"hallucinated {a.hallucinated}; tokens {answer_tokens(a)}",
        )
    for j in record.judgements:
        say(
            f"judge ({shown(j.scoring_id[:12])} run {j.run}) {shown(j.criterion)}: "
            f"{j.score} {shown(j.rationale)}",
        )
    say("[bold]provenance:[/bold] " + shown(json.dumps(pins(t), sort_keys=True)))
