"""`farm replay SWEEP_ID`: a stored sweep's tool calls sent again to today's servers, no model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from mcp_farm.scheduler.cli.common import (
    BrokerOption,
    DataDirOption,
    DbOption,
    console,
    engine_from,
    settings_from,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from mcp_farm.scheduler.operations.progress import SweepProgress
    from mcp_farm.scheduler.submission.expand import Plan
    from mcp_farm.scheduler.submission.replay import TrialChange
    from mcp_farm.schema import Settings


def replay(
    sweep_id: Annotated[str, typer.Argument(help="The recorded sweep whose calls to replay")],
    rerun: Annotated[
        bool, typer.Option(help="Replay again even if this replay was already recorded")
    ] = False,
    submit: Annotated[
        bool,
        typer.Option(
            "--submit",
            help="Publish the replay's trials to the distributed farm (queue farm.hw.cpu) "
            "instead of running them here; once they are done, `farm replay SWEEP_ID` again "
            "lists the changes",
        ),
    ] = False,
    db: DbOption = None,
    data_dir: DataDirOption = None,
    broker: BrokerOption = None,
) -> None:
    """Send every recorded trial's tool calls, in their recorded order, to the servers as they
    are defined now, without any model; grade them with the same scenarios, record a new sweep
    (`SWEEP-replay-…`) and list what changed: results, calls that now fail or now succeed, and
    outcomes. It measures the servers, not the model. `farm compare SWEEP REPLAY` compares the
    two scorecards.

    A replay already recorded is not run again (--rerun does): its changes are listed from the
    stored results, or, while its trials are still queued on the farm, how far it has got.
    """
    from mcp_farm.scheduler.operations.progress import sweep_progress
    from mcp_farm.scheduler.operations.queries import EMBEDDED_QUEUE
    from mcp_farm.scheduler.submission.embedded import run_embedded
    from mcp_farm.scheduler.submission.expand import expand
    from mcp_farm.scheduler.submission.queries import recorded_trials, sweep_spec_json
    from mcp_farm.scheduler.submission.replay import replay_spec, with_recordings
    from mcp_farm.schema import FarmError, SweepSpec

    settings = settings_from(db, data_dir, broker)
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
    before = (
        None
        if sweep_spec_json(engine=engine, sweep_id=plan.sweep_id) is None
        else sweep_progress(engine=engine, sweep_id=plan.sweep_id)
    )
    on_farm = before is not None and bool(set(before.by_queue) - {EMBEDDED_QUEUE})
    if before is not None and (on_farm or submit):
        if not rerun:  # recorded already: its changes, once its trials are done
            if not _still_running(before, sweep_id):
                report_changes(engine, sweep_id, plan.sweep_id, recorded)
            return
        if before.remaining and on_farm:
            raise FarmError(
                f"replay {plan.sweep_id} is still running on the farm ({before.finished}/"
                f"{before.total} trials done): wait for it (`farm sweep status {plan.sweep_id} "
                f"--watch`) or cancel it (`farm sweep cancel {plan.sweep_id}`) before --rerun"
            )
    if submit:
        submit_replay(plan, settings, engine, again=before is not None)
        console.print(
            f"when its trials are done, `farm replay {sweep_id}` lists the changes "
            f"(watch: farm sweep status {plan.sweep_id} --watch)",
            highlight=False,
        )
        return
    run_embedded(plan=plan, settings=settings, engine=engine, console=console, rerun=rerun)
    report_changes(engine, sweep_id, plan.sweep_id, recorded)


def _still_running(progress: SweepProgress, source_id: str) -> bool:
    """Say how far a replay on the farm has got, when it has trials left; whether it has."""
    if not progress.remaining:
        return False
    console.print(
        f"[yellow]not finished[/yellow]: {progress.finished}/{progress.total} trials of "
        f"{progress.sweep_id} done. Watch it with `farm sweep status {progress.sweep_id} "
        f"--watch`, then run `farm replay {source_id}` again for the changes.",
        highlight=False,
    )
    return True


def submit_replay(plan: Plan, settings: Settings, engine: Engine, *, again: bool) -> None:
    """Record the replay's trials and publish them to their queue, like `farm sweep submit`;
    `again` (a --rerun of a recorded replay) makes every trial pending and publishes it anew."""
    from rich.console import Console

    from mcp_farm.scheduler.cli.sweep import warn_if_local
    from mcp_farm.scheduler.submission.publish import publish_trials
    from mcp_farm.scheduler.submission.queries import record_plan, reopen_for_rerun
    from mcp_farm.scheduler.submission.submit import route, submit
    from mcp_farm.schema.tasks.broker import make_celery

    warn_if_local(settings.resolved_database_url(), Console(stderr=True))
    app = make_celery(settings)
    queues = route(plan, settings)
    if again:
        record_plan(engine=engine, plan=plan, queues=queues)
        reopen_for_rerun(engine=engine, plan=plan, queues=queues)
        published = publish_trials(app, ((t, queues[t.model.id]) for t in plan.trials))
    else:
        published = submit(plan=plan, settings=settings, engine=engine, app=app).published
    where = ", ".join(sorted(set(queues.values())))
    console.print(f"published {published} replay trials to {where}", highlight=False)


def report_changes(engine: Engine, source_id: str, replay_id: str, recorded: list[Any]) -> None:
    """List what the replay changed, from the stored results of both sweeps (`recorded`: the
    source sweep's trials, already read)."""
    from mcp_farm.scheduler.submission.queries import recorded_calls, recorded_trials
    from mcp_farm.scheduler.submission.replay import changes

    found = changes(
        recorded,
        recorded_trials(engine=engine, sweep_id=replay_id),
        recorded_calls(engine=engine, sweep_id=source_id),
        recorded_calls(engine=engine, sweep_id=replay_id),
    )
    print_changes(found, len(recorded))
    console.print(f"[dim]farm compare {source_id} {replay_id}[/dim]", highlight=False)


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
