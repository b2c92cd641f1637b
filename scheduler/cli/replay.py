"""`farm replay SWEEP_ID`: a stored sweep's tool calls sent again to today's servers, no model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from mcp_farm.scheduler.cli.common import (
    DataDirOption,
    DbOption,
    console,
    engine_from,
    settings_from,
)

if TYPE_CHECKING:
    from mcp_farm.scheduler.submission.replay import TrialChange


def replay(
    sweep_id: Annotated[str, typer.Argument(help="The recorded sweep whose calls to replay")],
    rerun: Annotated[
        bool, typer.Option(help="Replay again even if this replay was already recorded")
    ] = False,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Send every recorded trial's tool calls, in their recorded order, to the servers as they
    are defined now, without any model; grade them with the same scenarios, record a new sweep
    (`SWEEP-replay-…`) and list what changed: results, calls that now fail or now succeed, and
    outcomes. It measures the servers, not the model. `farm compare SWEEP REPLAY` compares the
    two scorecards."""
    from mcp_farm.scheduler.submission.embedded import run_embedded
    from mcp_farm.scheduler.submission.expand import expand
    from mcp_farm.scheduler.submission.queries import (
        recorded_calls,
        recorded_trials,
        sweep_spec_json,
    )
    from mcp_farm.scheduler.submission.replay import changes, replay_spec, with_recordings
    from mcp_farm.schema import FarmError, SweepSpec

    settings = settings_from(db, data_dir)
    engine = engine_from(settings)
    stored = sweep_spec_json(engine=engine, sweep_id=sweep_id)
    if stored is None:
        raise FarmError(f"no sweep {sweep_id!r} in this database (`farm report` lists them)")
    source = SweepSpec.model_validate_json(stored)
    recorded = recorded_trials(engine=engine, sweep_id=sweep_id)
    plan = expand(replay_spec(source, sweep_id), f"replay of {sweep_id}")
    plan = with_recordings(plan, recorded, sweep_id)
    console.print(
        f"[bold]{plan.sweep_id}[/bold]: {len(plan.trials)} recorded trials of {sweep_id} "
        "replayed against today's servers (no model runs: this measures the servers)"
    )
    run_embedded(plan=plan, settings=settings, engine=engine, console=console, rerun=rerun)
    found = changes(
        recorded,
        recorded_trials(engine=engine, sweep_id=plan.sweep_id),
        recorded_calls(engine=engine, sweep_id=sweep_id),
        recorded_calls(engine=engine, sweep_id=plan.sweep_id),
    )
    print_changes(found, len(recorded))
    console.print(f"[dim]farm compare {sweep_id} {plan.sweep_id}[/dim]", highlight=False)


def print_changes(found: list[TrialChange], total: int) -> None:
    if not found:
        console.print(f"[green]no change[/green]: all {total} trials answered as recorded")
        return
    outcomes = sum(1 for c in found if c.outcome_changed)
    console.print(
        f"[bold]{len(found)}[/bold] of {total} trials changed ({outcomes} outcome(s)):",
        highlight=False,
    )
    for change in found:
        model, prompt, scenario, toolset, rep, variant = change.key
        label = f"{model} · {prompt}{'+' + toolset if toolset else ''} · {scenario} #{rep}"
        label += f" (wording {variant})" if variant else ""
        verdict = f"{change.before} → {change.after}" if change.outcome_changed else change.after
        console.print(f"  {escape(label)}: {escape(verdict)}", highlight=False)
        for call in change.calls:
            console.print(
                f"    call {call.index + 1} {escape(call.tool)}: {escape(call.what)}",
                highlight=False,
            )
            for line in call.diff:
                console.print(f"      {escape(line)}", highlight=False, soft_wrap=True)
