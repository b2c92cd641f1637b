"""`farm scenarios list` and `farm scenarios validate`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from scenarios.validate import check_file, suite_files
from scheduler.cli_common import console

scenarios_app = typer.Typer(no_args_is_help=True, help="The scenario suites.")
TIERS = ("simple", "moderate", "complex")


@scenarios_app.command("list")
def list_scenarios(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Suite files or folders; default: the bundled ones")
    ] = None,
    tier: Annotated[str | None, typer.Option(help="Only this tier")] = None,
    tool: Annotated[str | None, typer.Option(help="Only scenarios expecting this tool")] = None,
    server: Annotated[str | None, typer.Option(help="Only scenarios attaching this server")] = None,
    tag: Annotated[str | None, typer.Option(help="Only scenarios with this tag")] = None,
) -> None:
    """A table of scenarios by suite, tier, tools and servers, with counts per tier."""
    table = Table(header_style="bold", pad_edge=False)
    for head in ("suite", "id", "tier", "tools", "servers", "wordings"):
        table.add_column(head, overflow="fold")
    tiers: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    per_suite: Counter[str] = Counter()
    broken = 0
    for path in suite_files(paths or []):
        suite, _problems = check_file(path)
        if suite is None:
            broken += 1
            console.print(f"[red]{path}: does not parse[/red] (farm scenarios validate {path})")
            continue
        for s in suite.scenarios:
            if tier and s.tier != tier:
                continue
            if tool and tool not in s.expected_tools:
                continue
            if server and server not in s.servers:
                continue
            if tag and tag not in s.tags:
                continue
            tiers[s.tier] += 1
            tools.update(dict.fromkeys(s.expected_tools, 1))
            per_suite[suite.suite] += 1
            table.add_row(
                suite.suite,
                s.id,
                s.tier,
                " → ".join(s.expected_tools) or "(none)",
                ", ".join(s.servers),
                str(1 + len(s.paraphrases)),
            )
    console.print(table)
    console.print(
        f"{sum(tiers.values())} scenarios: "
        + ", ".join(f"{tiers[t]} {t}" for t in TIERS)
        + f"; {len(tools)} tools expected; per suite: "
        + ", ".join(f"{name} {n}" for name, n in per_suite.items())
    )
    if broken:
        raise typer.Exit(1)


@scenarios_app.command("validate")
def validate(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Suite files or folders; default: the bundled ones")
    ] = None,
) -> None:
    """Check every suite file and print every problem; exit 1 if there is any."""
    files = suite_files(paths or [])
    total = 0
    scenarios = 0
    for path in files:
        suite, problems = check_file(path)
        scenarios += len(suite.scenarios) if suite else 0
        for problem in problems:
            # Escaped: a problem quotes the file's values (a pattern like `[a-z]`), not markup.
            console.print(f"[red]✗[/red] {escape(str(problem))}", highlight=False)
        total += len(problems)
    if total:
        console.print(f"[bold red]{total} problem(s)[/bold red] in {len(files)} file(s)")
        raise typer.Exit(1)
    console.print(f"[green]ok[/green]: {len(files)} file(s), {scenarios} scenarios")
