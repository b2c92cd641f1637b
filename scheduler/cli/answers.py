"""`farm answers plan`: how many judge runs (or scenarios) a difference needs, from a sweep's
measured judge variance."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from mcp_farm.scheduler.cli.common import (
    DataDirOption,
    DbOption,
    console,
    engine_from,
    settings_from,
)
from mcp_farm.schema import SpecError

answers_app = typer.Typer(help="Plan answer-quality sweeps from measured judge variance.")


@answers_app.command("plan")
def plan_cmd(
    sweep_id: Annotated[str | None, typer.Argument(help="Sweep id; default: the latest")] = None,
    difference: Annotated[
        float,
        typer.Option(help="The difference of means (0..1 scale) you need to resolve"),
    ] = 0.05,
    power: Annotated[
        float, typer.Option(help="The chance of finding a difference that large (0.5..0.99)")
    ] = 0.8,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """From the sweep's judge σ (scenario level), the judge runs per mean, or the scenarios
    at the sweep's runs, that resolve DIFFERENCE at a two-sided 95% test with POWER."""
    from mcp_farm.scheduler.operations.progress import latest_sweep_id
    from mcp_farm.scheduler.operations.queries import check_sweep
    from mcp_farm.scheduler.scorecard.aggregate import scorecard_of
    from mcp_farm.scheduler.statistics.judge_variance import detectable, runs_needed

    if not 0 < difference <= 1:
        raise SpecError("--difference", str(difference), "must lie in (0, 1]")
    if not 0.5 <= power <= 0.99:
        raise SpecError("--power", str(power), "must lie in [0.5, 0.99]")
    engine = engine_from(settings_from(db, data_dir))
    sweep_id = sweep_id or latest_sweep_id(engine=engine)
    check_sweep(engine=engine, sweep_id=sweep_id)
    card = scorecard_of(engine=engine, sweep_id=sweep_id)
    judges = [j for j in (card.answers.judges if card.answers else []) if j.sigma_scenario]
    if not judges:
        raise SpecError(
            sweep_id, "judge", "no judge variance measured (a judge with runs ≥ 2 is needed)"
        )
    scenarios = len({r.key for r in card.answers.of("scenario")}) if card.answers else 0
    table = Table(header_style="bold", pad_edge=False)
    heads = ["judge", "rubric", "σ scenario", "runs now", f"Δ at {power:.0%} power now"]
    heads += ["runs per scenario mean", f"runs for a config mean ({scenarios} scenarios)"]
    for head in heads:
        table.add_column(head, overflow="fold")
    for j in judges:
        assert j.sigma_scenario is not None
        need = runs_needed(j.sigma_scenario, difference, power)
        per_config = -(-need // max(scenarios, 1))
        table.add_row(
            j.judge,
            j.rubric_id,
            f"{j.sigma_scenario:.3f}",
            str(j.runs),
            f"{detectable(j.sigma_scenario, j.runs, power):.3f}" if j.runs else "–",
            str(need),
            str(max(2, per_config)),
        )
    console.print(
        f"To resolve Δ = {difference:g} (two-sided 95%, {power:.0%} power) in sweep {sweep_id}:"
    )
    console.print(table)
    console.print(
        "[dim]A scenario mean over R runs carries judge error σ/√R; a configuration's mean over "
        "S scenarios, σ/√(R·S) (judge noise only, not the spread between scenarios).[/dim]"
    )
