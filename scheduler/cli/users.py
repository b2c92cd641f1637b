"""`farm users plan`: how many user seeds and agent repetitions a wanted resolution of a pass
rate needs, from a sweep's measured agent × user variance or from given standard deviations;
`farm users freeze`: a sweep's recorded simulated users, frozen into a suite."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from mcp_farm.scheduler.cli.common import (
    DataDirOption,
    DbOption,
    console,
    engine_from,
    settings_from,
)
from mcp_farm.scheduler.statistics.user_variance import (
    Z95,
    Components,
    designs,
    fresh_user_repetitions,
)
from mcp_farm.schema import SpecError

users_app = typer.Typer(
    no_args_is_help=True,
    help="Simulated users: plan a sweep from the agent × user variance, freeze recorded users.",
)


@users_app.command("plan")
def plan_cmd(
    sweep_id: Annotated[
        str | None, typer.Argument(help="Sweep id to read the measured split from; default: latest")
    ] = None,
    resolution: Annotated[
        float,
        typer.Option(help="Half-width of the pass rate's 95% interval you want (0..1 scale)"),
    ] = 0.05,
    sd_agent: Annotated[
        float | None, typer.Option(help="σ between agent repetitions (instead of a sweep's)")
    ] = None,
    sd_user: Annotated[
        float | None, typer.Option(help="σ between user seeds (instead of a sweep's)")
    ] = None,
    sd_rest: Annotated[
        float, typer.Option(help="σ of interaction + residual, with --sd-agent/--sd-user")
    ] = 0.0,
    scenarios: Annotated[
        int | None,
        typer.Option(help="Scenarios per configuration; default: the sweep's (1 with --sd-*)"),
    ] = None,
    seeds: Annotated[int, typer.Option(help="List designs up to this many user seeds")] = 8,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """For m = 1..SEEDS user seeds crossed with every agent repetition, the fewest repetitions
    k whose configuration pass rate over the scenarios has a 95% half-width ≤ RESOLUTION:
    1.96·√((σ²_agent/k + σ²_user/m + σ²_rest/(k·m))/S); and, for comparison, the repetitions
    that each meet a new user (`seeds: 1`)."""
    if not 0 < resolution <= 1:
        raise SpecError("--resolution", str(resolution), "must lie in (0, 1]")
    if scenarios is not None and scenarios < 1:
        raise SpecError("--scenarios", str(scenarios), "must be at least 1")
    if seeds < 1:
        raise SpecError("--seeds", str(seeds), "must be at least 1")
    if sd_agent is not None or sd_user is not None:
        if sd_agent is None or sd_user is None or min(sd_agent, sd_user, sd_rest) < 0:
            raise SpecError("--sd-agent/--sd-user", "", "give both, each ≥ 0 (and --sd-rest ≥ 0)")
        given = Components(sd_agent**2, sd_user**2, sd_rest**2, (), scenarios or 1, 0, 0)
        _print_plan("given", given, scenarios or 1, resolution, seeds)
        return
    for name, parts in _measured(sweep_id, db, data_dir):
        _print_plan(name, parts, scenarios or parts.scenarios, resolution, seeds)


def _measured(
    sweep_id: str | None, db: str | None, data_dir: Path | None
) -> list[tuple[str, Components]]:
    """Each configuration's measured components in the sweep's scorecard."""
    from mcp_farm.scheduler.operations.progress import latest_sweep_id
    from mcp_farm.scheduler.operations.queries import check_sweep
    from mcp_farm.scheduler.scorecard.aggregate import scorecard_of

    engine = engine_from(settings_from(db, data_dir))
    sweep_id = sweep_id or latest_sweep_id(engine=engine)
    check_sweep(engine=engine, sweep_id=sweep_id)
    card = scorecard_of(engine=engine, sweep_id=sweep_id)
    found = [
        (
            f"{u.model} × {u.prompt} (sweep {sweep_id})",
            Components(
                v.agent, v.user, v.rest, tuple(v.clamped), v.scenarios, v.repetitions, v.seeds
            ),
        )
        for u in card.simulated_users
        if (v := u.variance) is not None
    ]
    if not found:
        raise SpecError(
            sweep_id,
            "user_model.seeds",
            "no agent × user variance measured (a sweep with repetitions ≥ 2 and "
            "user_model.seeds ≥ 2 is needed), or give --sd-agent and --sd-user",
        )
    return found


def _print_plan(
    name: str, parts: Components, scenarios: int, resolution: float, seeds: int
) -> None:
    """One configuration's designs, as a table with the new-user line under it."""
    console.print(
        f"[bold]{escape(name)}[/bold]: σ agent {math.sqrt(parts.agent):.3f}, σ user "
        f"{math.sqrt(parts.user):.3f}, σ interaction + residual {math.sqrt(parts.rest):.3f}; "
        f"{scenarios} scenario{'' if scenarios == 1 else 's'}, wanted ± {resolution:g}",
        highlight=False,
    )
    table = Table(header_style="bold", pad_edge=False)
    for head in ("user seeds m", "agent repetitions k", "trials per scenario", "± reached"):
        table.add_column(head, justify="right")
    for d in designs(parts, scenarios, resolution, seeds):
        table.add_row(
            str(d.m),
            "–" if d.k is None else str(d.k),
            "–" if d.trials_per_scenario is None else str(d.trials_per_scenario),
            "–" if d.resolution is None else f"{d.resolution:.3f}",
        )
    console.print(table)
    fresh = fresh_user_repetitions(parts, scenarios, resolution)
    console.print(
        f"[dim]–: the user's share alone, {Z95:.2f}·σ_user/√(m·S), is wider than ± "
        f"{resolution:g} at that m. A new user for every repetition (`seeds: 1`) needs "
        f"{fresh} repetitions ({fresh} trials per scenario) for the same ±: cheapest for the "
        "rate, but it cannot measure the split. The scenarios are held fixed (two "
        "configurations compared on the same ones).[/dim]",
        highlight=False,
    )


@users_app.command("freeze")
def freeze(
    sweep_id: Annotated[str, typer.Argument(help="The recorded sweep whose users to freeze")],
    out: Annotated[Path, typer.Option("--out", help="The suite file to write (YAML)")],
    scenario: Annotated[
        list[str] | None,
        typer.Option("--scenario", help="Only this scenario id (repeatable); default: all"),
    ] = None,
    repetition: Annotated[
        int | None,
        typer.Option(help="Freeze this repetition's conversation; default: the lowest recorded"),
    ] = None,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Write a suite whose scenarios replay the user messages a simulated user sent in SWEEP_ID
    (one conversation per scenario, ids and versions kept), to run against another agent with
    no user model: `scenarios: {suites: [OUT]}`. `farm compare LIVE FROZEN --by
    config,scenario` then shows the user's effect (docs/simulated-user.md)."""
    import yaml

    from mcp_farm.scheduler.submission.freeze import frozen_suite, recorded

    engine = engine_from(settings_from(db, data_dir))
    found = recorded(engine, sweep_id, scenario or [], repetition)
    suite = frozen_suite(out.stem, sweep_id, found)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(suite, sort_keys=False, allow_unicode=True), encoding="utf-8")
    for conv in found:
        console.print(
            f"{escape(conv.scenario_id)}: {len(conv.messages)} user message(s) after the "
            f"opening, from trial {conv.trial_id[:12]} (repetition {conv.repetition})"
        )
    console.print(f"wrote {escape(str(out))}: {len(found)} frozen scenario(s)")
