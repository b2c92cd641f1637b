"""`farm scenarios list` and `farm scenarios validate`."""

from __future__ import annotations

import difflib
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, get_args

import typer
from rich.markup import escape
from rich.table import Table

from mcp_farm.scheduler.cli.common import (
    DataDirOption,
    console,
    settings_from,
)

if TYPE_CHECKING:
    from mcp_farm.schema import Scenario, Settings, SpecError
    from mcp_farm.schema.tasks.messages import SuiteToCheck
from mcp_farm.schema import Tier

scenarios_app = typer.Typer(no_args_is_help=True, help="The scenario suites.")
TIERS: tuple[str, ...] = get_args(Tier)


@scenarios_app.command("list")
def list_scenarios(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Suite files or folders; default: the bundled ones")
    ] = None,
    tier: Annotated[str | None, typer.Option(help=f"Only this tier: {', '.join(TIERS)}")] = None,
    tool: Annotated[str | None, typer.Option(help="Only scenarios expecting this tool")] = None,
    server: Annotated[str | None, typer.Option(help="Only scenarios attaching this server")] = None,
    tag: Annotated[str | None, typer.Option(help="Only scenarios with this tag")] = None,
) -> None:
    """A table of scenarios by suite, tier, tools and servers, with counts per tier.

    An unknown tier, or a tag, tool or server that no scenario has, is an error (exit 2)
    naming what there is, not an empty table.
    """
    from mcp_farm.scenarios.validate import check_file, suite_files

    if tier is not None and tier not in TIERS:
        raise typer.BadParameter(
            f"{tier!r} is not a tier; use one of {', '.join(TIERS)}", param_hint="'--tier'"
        )
    found: list[tuple[str, Scenario]] = []
    broken = 0
    for path in suite_files(paths or []):
        suite, _problems = check_file(path)
        if suite is None:
            broken += 1
            console.print(f"[red]{path}: does not parse[/red] (farm scenarios validate {path})")
            continue
        found += [(suite.suite, s) for s in suite.scenarios]
    scenarios = [s for _suite, s in found]
    _known("tag", tag, {t for s in scenarios for t in s.tags})
    _known("tool", tool, {t for s in scenarios for t in s.expected_tools})
    _known("server", server, {name for s in scenarios for name in s.servers})
    shown = [
        (suite, s)
        for suite, s in found
        if (tier is None or s.tier == tier)
        and (tool is None or tool in s.expected_tools)
        and (server is None or server in s.servers)
        and (tag is None or tag in s.tags)
    ]
    if found and not shown:
        # Each value exists somewhere, but not all of them together.
        console.print("no scenario matches all of these filters together")
    else:
        _print_scenarios(shown)
    if broken:
        raise typer.Exit(1)


def _known(what: str, value: str | None, known: set[str]) -> None:
    """Refuse a filter value no scenario has, suggesting the closest ones that exist."""
    if value is None or value in known:
        return
    close = difflib.get_close_matches(value, sorted(known), n=5)
    hint = f"; close matches: {', '.join(close)}" if close else ""
    raise typer.BadParameter(f"no scenario has {what} {value!r}{hint}", param_hint=f"'--{what}'")


def _print_scenarios(shown: list[tuple[str, Scenario]]) -> None:
    table = Table(header_style="bold", pad_edge=False)
    for head in ("suite", "id", "tier", "tools", "servers", "wordings"):
        table.add_column(head, overflow="fold")
    tiers: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    per_suite: Counter[str] = Counter()
    for suite, s in shown:
        tiers[s.tier] += 1
        tools.update(dict.fromkeys(s.expected_tools, 1))
        per_suite[suite] += 1
        table.add_row(
            suite,
            s.id,
            s.tier,
            _tools(s),
            ", ".join(s.servers),
            str(s.wordings),
        )
    console.print(table)
    console.print(
        f"{sum(tiers.values())} scenarios: "
        + ", ".join(f"{tiers[t]} {t}" for t in TIERS)
        + f"; {len(tools)} tools expected; per suite: "
        + ", ".join(f"{name} {n}" for name, n in per_suite.items())
    )


@scenarios_app.command("validate")
def validate(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Suite files or folders; default: the bundled ones")
    ] = None,
    servers: Annotated[
        bool,
        typer.Option(
            "--servers/--no-servers",
            help="Start the servers the suites attach (once each) and check every tool a "
            "scenario names, and the shape of its matchers, against what they list",
        ),
    ] = True,
    data_dir: DataDirOption = None,
) -> None:
    """Check every suite file and print every problem, with its line; exit 1 if there is any."""
    from mcp_farm.scenarios.validate import check_parts, suite_files
    from mcp_farm.schema.tasks.messages import SuiteToCheck

    files = suite_files(paths or [])
    found = {str(path): check_parts(path) for path in files}
    # What parsed of each file, even of one with schema errors: every check runs on it.
    parsed = [
        SuiteToCheck(source=k, suite=c.checked) for k, c in found.items() if c.checked is not None
    ]
    more, notes = _call_problems(parsed, settings_from(data_dir=data_dir), start_servers=servers)
    printed: set[str] = set()
    for source, checked in found.items():
        mine = [*checked.problems, *checked.own(p for p in more if p.source == source)]
        # In the order of the file (a catalogue server's problems after the file's own).
        for problem in sorted(mine, key=lambda p: (p.source != source, p.line or 0)):
            if str(problem) in printed:
                continue  # a catalogue server's problem, met again through another suite
            printed.add(str(problem))
            # Escaped: a problem quotes the file's values (a pattern like `[a-z]`), not markup.
            console.print(f"[red]✗[/red] {escape(str(problem))}", highlight=False)
    for source, checked in found.items():
        for note in checked.own(n for n in notes if n.source == source):
            console.print(f"[yellow]![/yellow] {escape(str(note))}", highlight=False)
    if printed:
        console.print(f"[bold red]{len(printed)} problem(s)[/bold red] in {len(files)} file(s)")
        raise typer.Exit(1)
    scenarios = sum(len(s.suite.scenarios) for s in parsed)
    console.print(f"[green]ok[/green]: {len(files)} file(s), {scenarios} scenarios")


def _call_problems(
    suites: list[SuiteToCheck], settings: Settings, *, start_servers: bool
) -> tuple[list[SpecError], list[SpecError]]:
    """What the workers' code checks (`farm.check_calls`, found by name: the scheduler never
    imports the workers): examples against their steps' matchers, and, with `start_servers`,
    tool names and matcher shapes against what the servers list. Problems, then notes."""
    from mcp_farm.schema import SpecError, load_task
    from mcp_farm.schema.tasks.messages import (
        CallCheckRequest,
        CallCheckResult,
        read_result,
    )

    if not suites:
        return [], []
    request = CallCheckRequest(suites=suites, start_servers=start_servers)
    with console.status("starting the suites' servers" if start_servers else "checking examples"):
        reply = load_task("farm.check_calls")(request, settings)
    result = read_result("farm.check_calls", reply, CallCheckResult)
    return (
        [SpecError(p.source, p.field, p.problem) for p in result.problems],
        [SpecError(n.source, n.field, n.problem) for n in result.notes],
    )


def _tools(scenario: Scenario) -> str:
    """The steps' tools in order; each route's on a line of its own, named."""
    ways = scenario.ways()
    lines = [
        (f"{name}: " if name else "") + (" → ".join(way.expected_tools) or "(none)")
        for name, way in ways
    ]
    return "\n".join(lines)
