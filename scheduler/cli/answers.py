"""`farm answers plan`: how many judge runs per transcript, and how many scenarios, a
difference needs, from a sweep's measured judge variance."""

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
    """From the sweep's judge σ (scenario level): the judge runs per transcript, and the
    scenarios at the sweep's runs, that resolve DIFFERENCE between two configurations' means,
    at the two-sided 95% threshold and with POWER, by a t-test that estimates σ from the runs."""
    from mcp_farm.scheduler.operations.progress import latest_sweep_id
    from mcp_farm.scheduler.operations.queries import check_sweep
    from mcp_farm.scheduler.scorecard.aggregate import scorecard_of
    from mcp_farm.scheduler.statistics.power import plan

    if not 0 < difference <= 1:
        raise SpecError("--difference", str(difference), "must lie in (0, 1]")
    if not 0.5 <= power <= 0.99:
        raise SpecError("--power", str(power), "must lie in [0.5, 0.99]")
    engine = engine_from(settings_from(db, data_dir))
    sweep_id = sweep_id or latest_sweep_id(engine=engine)
    check_sweep(engine=engine, sweep_id=sweep_id)
    card = scorecard_of(engine=engine, sweep_id=sweep_id)
    judges = [
        j
        for j in (card.answers.judges if card.answers else [])
        if j.sigma_scenario is not None and j.runs > 0
    ]
    if not judges:
        raise SpecError(
            sweep_id, "judge", "no judge variance measured (a judge with runs ≥ 2 is needed)"
        )
    scenarios = max(1, len({r.key for r in card.answers.of("scenario")}) if card.answers else 0)
    table = Table(header_style="bold", pad_edge=False)
    of = f"{scenarios} scenario{'' if scenarios == 1 else 's'}"
    runs_now = sorted({j.runs for j in judges})
    heads = ["judge", "rubric", "σ of one run's scenario mean", "runs now", "to reach"]
    heads += [f"Δ now, configuration mean ({of})"]
    heads += ["runs, one scenario's mean alone"]
    heads += [f"runs per transcript, configuration mean ({of})"]
    heads += ["scenarios, configuration mean at runs now"]
    for head in heads:
        table.add_column(head, overflow="fold")
    powers = dict.fromkeys([0.5, power])  # the threshold, then the power asked for
    for j in judges:
        assert j.sigma_scenario is not None
        for p in powers:
            made = plan(j.sigma_scenario, j.runs, scenarios, difference, p)
            table.add_row(
                j.judge,
                j.rubric_id,
                f"{j.sigma_scenario:.3f}",
                str(j.runs),
                "95% threshold" if p == 0.5 else f"{p:.0%} power",
                "–" if made.detectable_now is None else f"{made.detectable_now:.3f}",
                _count(made.runs_one_scenario),
                _count(made.runs_per_transcript),
                _count(made.scenarios),
            )
    console.print(
        f"To resolve Δ = {difference:g} between two configurations' means (two-sided 95% t-test, "
        f"σ estimated from the runs) in sweep {sweep_id}, {of} at "
        f"{'/'.join(map(str, runs_now))} judge runs:"
    )
    console.print(table)
    console.print(
        "[dim]Judge noise only, not the spread between scenarios. One scenario's mean alone: "
        "two means of N runs, σ on 2N − 2 degrees of freedom. A configuration's mean over S "
        "scenarios of R runs averages R·S readings, σ on 2·S·(R − 1). Δ now: what the sweep "
        "resolves today, per configuration (the scorecard's judge table gives it per scenario). "
        "At the 95% threshold a true Δ is found about half the time; plan by the power row. "
        "–: out of reach (one run gives σ no degrees of freedom).[/dim]"
    )


def _count(value: int | None) -> str:
    return "–" if value is None else str(value)
