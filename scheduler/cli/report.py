"""`farm report` (a scorecard in every format, with gates) and `farm compare`."""

from __future__ import annotations

import io
import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from mcp_farm.scheduler.cli.common import (
    GATE_FAILED,
    DataDirOption,
    DbOption,
    console,
    engine_from,
    print_replay_note,
    settings_from,
)

if TYPE_CHECKING:
    from mcp_farm.schema import Gate
    from mcp_farm.schema.scorecard import Scorecard

    pass


class Counting(StrEnum):
    # Upper-case members: `count` would shadow str.count.
    COUNT = "count"
    EXCLUDE = "exclude"


COUNTING: dict[Counting, Literal["count", "exclude"]] = {
    Counting.COUNT: "count",
    Counting.EXCLUDE: "exclude",
}


class Format(StrEnum):
    table = "table"
    md = "md"
    json = "json"
    junit = "junit"
    html = "html"


def register(app: typer.Typer) -> None:
    app.command()(report)
    app.command(name="compare")(compare_cmd)


def report(
    sweep_id: Annotated[str | None, typer.Argument(help="Sweep id; default: the latest")] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format")] = Format.table,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file instead of stdout")
    ] = None,
    gate: Annotated[
        bool, typer.Option("--gate", help="Check the sweep's gates; exit 1 if one fails")
    ] = False,
    gates_from: Annotated[
        Path | None,
        typer.Option("--gates", help="Take the gates from this sweep YAML instead of the sweep's"),
    ] = None,
    rebuild: Annotated[
        bool, typer.Option(help="Build the scorecard again from the trials (and store it)")
    ] = False,
    scoring: Annotated[
        str | None,
        typer.Option(help="Answer quality from this scoring pass (default: the newest)"),
    ] = None,
    left_cassette: Annotated[
        Counting | None,
        typer.Option(
            "--left-cassette",
            help="Trials that called a replayed server off its cassette: count them, or "
            "exclude them from every rate, for this report (default: the sweep's "
            "`left_cassette`)",
        ),
    ] = None,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Show the scorecard of a recorded sweep: a table, Markdown, JSON, JUnit XML or HTML."""
    from mcp_farm.scheduler.operations.progress import latest_sweep_id
    from mcp_farm.scheduler.operations.queries import check_sweep
    from mcp_farm.scheduler.report.formats import to_junit, to_markdown
    from mcp_farm.scheduler.report.html.page import to_html
    from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
    from mcp_farm.scheduler.scorecard.aggregate import scorecard_of
    from mcp_farm.scheduler.scorecard.build import build_scorecard
    from mcp_farm.scheduler.scorecard.queries.samples import sample_trials
    from mcp_farm.scheduler.submission.expand import load_sweep
    from mcp_farm.schema import SpecError, SweepSpec

    engine = engine_from(settings_from(db, data_dir))
    sweep_id = sweep_id or latest_sweep_id(engine=engine)
    check_sweep(engine=engine, sweep_id=sweep_id)
    if scoring or left_cassette:
        # An older scoring pass, or another way of counting, is shown, not stored: the stored
        # card stays the newest, as the sweep defines it.
        card = build_scorecard(
            engine=engine,
            sweep_id=sweep_id,
            scoring=scoring,
            left_cassette=None if left_cassette is None else COUNTING[left_cassette],
        )
        if scoring and card.answers is None:
            raise SpecError("--scoring", scoring, f"no scoring pass with scores in {sweep_id}")
    else:
        card = scorecard_of(engine=engine, sweep_id=sweep_id, rebuild=rebuild)
    # When the report itself goes to stdout, everything said about it goes to stderr.
    notes = console if fmt == Format.table or output is not None else Console(stderr=True)
    print_replay_note(engine, sweep_id, notes)
    if card.done < card.total:
        notes.print(f"[dim]{card.done}/{card.total} trials recorded so far[/dim]")
    if fmt == Format.table and output is None:
        print_scorecard(card, console)
    else:
        body = {
            Format.table: lambda: _plain_tables(card),
            Format.md: lambda: to_markdown(card),
            Format.json: lambda: card.model_dump_json(indent=2) + "\n",
            Format.junit: lambda: to_junit(card),
            Format.html: lambda: to_html(card, sample_trials(engine, card.sweep_id)),
        }[fmt]()
        if output is None:
            sys.stdout.write(body)
        else:
            output.write_text(body, encoding="utf-8")
            notes.print(f"wrote {output} ({fmt.value})")
    if gate:
        spec = (
            load_sweep(gates_from)
            if gates_from
            else SweepSpec.model_validate(json.loads(card.provenance.spec_json))
        )
        _enforce(spec.gates, card, notes)


def _plain_tables(card: Scorecard) -> str:
    """The terminal tables as plain text, 100 columns wide, for a file."""
    from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard

    buffer = io.StringIO()
    print_scorecard(card, Console(file=buffer, width=100, no_color=True, force_terminal=False))
    return buffer.getvalue()


def _enforce(card_gates: list[Gate], card: Scorecard, console: Console) -> None:
    from mcp_farm.scheduler.scorecard.gates import check_gates

    if not card_gates:
        console.print(
            "[yellow]--gate: the sweep declares no gates[/yellow] (add `gates:` to the sweep "
            "file, or pass --gates FILE)"
        )
        raise typer.Exit(GATE_FAILED)
    checked, breaches = check_gates(card, card_gates)
    if breaches:
        console.print(f"[bold red]gates failed[/bold red]: {len(breaches)} of {checked} checks")
        for breach in breaches:
            console.print(f"  ✗ {breach.explain()}", highlight=False)
        raise typer.Exit(GATE_FAILED)
    console.print(f"[green]gates passed[/green]: {len(card_gates)} gate(s), {checked} checks")


def compare_cmd(
    a: Annotated[
        str,
        typer.Argument(help="Baseline: SWEEP or SWEEP@MODEL/PROMPT[+TOOLSET] (prompt optional)"),
    ],
    b: Annotated[
        str,
        typer.Argument(help="Candidate: SWEEP or SWEEP@MODEL/PROMPT[+TOOLSET] (prompt optional)"),
    ],
    by: Annotated[
        str,
        typer.Option(
            help="Cells to compare, comma-separated: config,tool,tier,phrasing,scenario, "
            "conversation,turn (conversation and turn pass rates per config), and "
            "state,wrong_state,other_path (per config, over the trials with state probes)"
        ),
    ] = "config,tool,tier,conversation,turn,state,wrong_state,other_path",
    all_cells: Annotated[
        bool, typer.Option("--all", help="List every cell, not only significant ones")
    ] = False,
    fail_on_regression: Annotated[
        bool, typer.Option(help="Exit 1 when any cell regressed significantly")
    ] = False,
    answers: Annotated[
        bool,
        typer.Option(
            "--answers",
            help="Also compare answer quality (fairness, adoption; scenario-level means)",
        ),
    ] = False,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """B minus A per cell, with an interval clustered by scenario at the level Holm's adjustment
    tested the cell at (so it excludes 0 only in a significant cell); regressions first. Tool
    sets are part of the config label: S@MODEL/PROMPT+TOOLSET."""
    from mcp_farm.scheduler.report.cells import pct
    from mcp_farm.scheduler.report.terminal.answers import print_answer_comparison
    from mcp_farm.scheduler.scorecard.compare import CELLS, Side, compare, user_note
    from mcp_farm.scheduler.scorecard.compare_answers import compare_answers

    dimensions = [d.strip() for d in by.split(",") if d.strip()]
    unknown = [d for d in dimensions if d not in CELLS]
    if unknown or not dimensions:
        # A misspelt cell kind would otherwise compare nothing and report "0 cells compared".
        given = f"unknown cell kind {', '.join(map(repr, unknown))}" if unknown else "none given"
        raise typer.BadParameter(f"{given}; use some of {', '.join(CELLS)}", param_hint="'--by'")
    engine = engine_from(settings_from(db, data_dir))
    if answers:
        found_answers = compare_answers(engine, Side.parse(a), Side.parse(b))
        print_answer_comparison(found_answers, a, b, console)
    found = compare(engine, Side.parse(a), Side.parse(b), dimensions)
    table = Table(
        title=f"{b} vs {a} (Holm-adjusted within each kind of cell)",
        title_justify="left",
        header_style="bold",
        pad_edge=False,
    )
    for head in ("kind", "cell"):
        table.add_column(head)
    for head in ("A", "B", "Δ", "CI at Holm's level", "p adj", "1st try A→B"):
        table.add_column(head, justify="right")
    table.add_column("verdict")
    shown = [c for c in found if all_cells or c.significant]
    for c in shown:
        d = c.diff
        colour = {"regression": "red", "improvement": "green", "changed": "yellow"}.get(
            c.verdict, "dim"
        )
        table.add_row(
            c.dimension,
            c.label,
            f"{pct(d.a_rate)} n={d.a_n}",
            f"{pct(d.b_rate)} n={d.b_n}",
            f"{100 * d.diff:+.0f}pt",
            c.interval_text,
            f"{c.p_adjusted:.3f}",
            f"{pct(c.first_try[0])}→{pct(c.first_try[1])}",
            f"[{colour}]{c.verdict_text}[/{colour}]",
        )
    console.print(table)
    regressions = sum(1 for c in found if c.verdict == "regression")
    improvements = sum(1 for c in found if c.verdict == "improvement")
    changed = sum(1 for c in found if c.verdict == "changed")
    unresolved = sum(1 for c in found if c.verdict == "not significant")
    quiet = len(found) - regressions - improvements - changed
    console.print(
        f"{len(found)} cells compared: {regressions} regression(s), {improvements} "
        f"improvement(s), "
        + (f"{changed} changed (other_path: neither better nor worse), " if changed else "")
        + f"{quiet} without a significant change"
        + (f" ({unresolved} with too few trials to tell)" if unresolved else "")
        + ("" if all_cells else " (--all lists them)")
    )
    if note := user_note(engine, Side.parse(a), Side.parse(b)):
        console.print(f"[yellow]{escape(note)}[/yellow]")
    if fail_on_regression and regressions:
        raise typer.Exit(GATE_FAILED)
