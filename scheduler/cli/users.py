"""`farm users plan`: how many agent repetitions, user seeds and scenarios it takes to find a
difference between two configurations' pass rates, from a sweep's measured agent × user variance
or from given standard deviations; `farm users freeze`: a sweep's recorded simulated users,
frozen into a suite."""

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
from mcp_farm.scheduler.statistics.user_power import UserPlan, plan
from mcp_farm.scheduler.statistics.user_variance import Z95, Components, mean_se
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
    difference: Annotated[
        float,
        typer.Option(help="The difference of two configurations' pass rates to find (0..1)"),
    ] = 0.1,
    power: Annotated[
        float, typer.Option(help="The chance of finding a difference that large (0.5..0.99)")
    ] = 0.8,
    alpha: Annotated[float, typer.Option(help="The two-sided test's level (0.001..0.2)")] = 0.05,
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
    """For m = 1..SEEDS user seeds per agent repetition (1: a new user every repetition), the
    fewest agent repetitions k per scenario with which a two-sided t-test at level ALPHA finds
    a true DIFFERENCE between two configurations' pass rates with POWER, over the scenarios;
    for a measured sweep, also the difference its own design finds and the scenarios that
    design needs (docs/simulated-user.md, "Planning")."""
    _check(difference, power, alpha, scenarios, seeds)
    ask = (difference, power, alpha, seeds)
    if sd_agent is not None or sd_user is not None:
        if sd_agent is None or sd_user is None or min(sd_agent, sd_user, sd_rest) < 0:
            raise SpecError("--sd-agent/--sd-user", "", "give both, each ≥ 0 (and --sd-rest ≥ 0)")
        given = Components(sd_agent**2, sd_user**2, sd_rest**2, (), scenarios or 1, 0, 0)
        _print_plan("given", given, scenarios or 1, ask, measured=False)
        return
    for name, parts in _measured(sweep_id, db, data_dir):
        _print_plan(name, parts, scenarios or parts.scenarios, ask, measured=True)


def _check(
    difference: float, power: float, alpha: float, scenarios: int | None, seeds: int
) -> None:
    if not 0 < difference <= 1:
        raise SpecError("--difference", str(difference), "must lie in (0, 1]")
    if not 0.5 <= power <= 0.99:
        raise SpecError("--power", str(power), "must lie in [0.5, 0.99]")
    if not 0.001 <= alpha <= 0.2:
        raise SpecError("--alpha", str(alpha), "must lie in [0.001, 0.2]")
    if scenarios is not None and scenarios < 1:
        raise SpecError("--scenarios", str(scenarios), "must be at least 1")
    if seeds < 1:
        raise SpecError("--seeds", str(seeds), "must be at least 1")


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
    name: str,
    parts: Components,
    scenarios: int,
    ask: tuple[float, float, float, int],
    measured: bool,
) -> None:
    """One configuration's plan: the measured design's figures, then the designs' table."""
    difference, power, alpha, seeds = ask
    now = (parts.k, parts.m) if measured else None
    made = plan(parts, scenarios, difference, power, alpha, seeds, now)
    of = f"{scenarios} scenario{'' if scenarios == 1 else 's'}"
    console.print(
        f"[bold]{escape(name)}[/bold]: σ agent {math.sqrt(parts.agent):.3f}, σ user "
        f"{math.sqrt(parts.user):.3f}, σ interaction + residual {math.sqrt(parts.rest):.3f}",
        highlight=False,
    )
    if now is not None:
        _print_now(parts, scenarios, made, ask)
    console.print(
        f"To find a difference of {difference:g} between two configurations' pass rates with "
        f"{power:.0%} power (two-sided t-test, α = {alpha:g}), {of}:",
        highlight=False,
    )
    table = Table(header_style="bold", pad_edge=False)
    for head in ("user seeds m", "agent repetitions k", "trials per scenario", "power reached"):
        table.add_column(head, justify="right")
    for d in made.designs:
        table.add_row(
            "1 (a new user each)" if d.m == 1 else str(d.m),
            "–" if d.k is None else str(d.k),
            "–" if d.trials_per_scenario is None else str(d.trials_per_scenario),
            "–" if d.power is None else f"{d.power:.1%}",
        )
    console.print(table)
    console.print(
        "[dim]m user seeds: every agent repetition meets the same m users; m = 1 is `seeds: "
        "1`, a new user every repetition (fewest trials, but it cannot measure the split). –: "
        "out of reach at that m, because the user's share, σ²_user/m, does not shrink with "
        "more repetitions. The scenarios are held fixed (both configurations on the same "
        "ones); the test estimates the variance of a scenario's pass rate from each scenario's "
        "own trials, as `farm answers plan` does from judge runs.[/dim]",
        highlight=False,
    )


def _print_now(
    parts: Components, scenarios: int, made: UserPlan, ask: tuple[float, float, float, int]
) -> None:
    """What the measured design (its k × m over the scenarios) gives."""
    difference, power, alpha, _seeds = ask
    k, m = parts.k, parts.m
    half = Z95 * mean_se(parts, k, m, scenarios)
    found = "–" if made.detectable_now is None else f"{made.detectable_now:.3f}"
    needed = "out of reach" if made.scenarios_now is None else str(made.scenarios_now)
    console.print(
        f"  As measured, {k} agent repetitions × {m} user seeds over {scenarios} scenario(s): "
        f"one configuration's pass rate ± {half:.3f} (95% half-width, as the scorecard shows "
        f"it); smallest difference between two configurations found with {power:.0%} power "
        f"(α = {alpha:g}): {found}; scenarios needed to find {difference:g}: {needed}.",
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
