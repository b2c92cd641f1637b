"""`farm replay SWEEP_ID`: a stored sweep's tool calls sent again to today's servers, no model."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from mcp_farm.scheduler.cli.common import (
    GATE_FAILED,
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
    from mcp_farm.scheduler.submission.replay_changes import ToolChange, TrialChange
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
    fail_on_change: Annotated[
        bool,
        typer.Option(
            "--fail-on-change",
            help="Exit 1 when any trial or any server's tool list changed (after the servers' "
            "ignore rules), for CI",
        ),
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print the changes as one JSON document on stdout (notes go to stderr)"
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
    Values the servers' `ignore:` rules name (timestamps, random ids) are not compared.
    """
    from mcp_farm.scheduler.operations.progress import sweep_progress
    from mcp_farm.scheduler.operations.queries import EMBEDDED_QUEUE
    from mcp_farm.scheduler.submission.embedded import run_embedded
    from mcp_farm.scheduler.submission.expand import expand
    from mcp_farm.scheduler.submission.queries import recorded_trials, sweep_spec_json
    from mcp_farm.scheduler.submission.replay import replay_spec, with_recordings
    from mcp_farm.schema import FarmError, SweepSpec

    notes = Console(stderr=True) if as_json else console
    listing = Listing(as_json=as_json, fail_on_change=fail_on_change, notes=notes)
    settings = settings_from(db, data_dir, broker)
    engine = engine_from(settings)
    stored = sweep_spec_json(engine=engine, sweep_id=sweep_id)
    if stored is None:
        raise FarmError(f"no sweep {sweep_id!r} in this database (`farm report` lists them)")
    source = SweepSpec.model_validate_json(stored)
    recorded = recorded_trials(engine=engine, sweep_id=sweep_id)
    plan = expand(replay_spec(source, sweep_id), f"replay of {sweep_id}")
    plan = with_recordings(plan, recorded, sweep_id)
    notes.print(
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
            if not _still_running(before, sweep_id, notes):
                report_changes(engine, plan, sweep_id, recorded, listing)
            return
        if before.remaining and on_farm:
            raise FarmError(
                f"replay {plan.sweep_id} is still running on the farm ({before.finished}/"
                f"{before.total} trials done): wait for it (`farm sweep status {plan.sweep_id} "
                f"--watch`) or cancel it (`farm sweep cancel {plan.sweep_id}`) before --rerun"
            )
    if submit:
        submit_replay(plan, settings, engine, again=before is not None)
        notes.print(
            f"when its trials are done, `farm replay {sweep_id}` lists the changes "
            f"(watch: farm sweep status {plan.sweep_id} --watch)",
            highlight=False,
        )
        return
    run_embedded(plan=plan, settings=settings, engine=engine, console=notes, rerun=rerun)
    report_changes(engine, plan, sweep_id, recorded, listing)


@dataclass(frozen=True)
class Listing:
    """How `farm replay` lists what it found."""

    as_json: bool
    fail_on_change: bool
    notes: Console
    """Where lines for people go: stdout, or stderr when stdout carries JSON."""


def _still_running(progress: SweepProgress, source_id: str, notes: Console) -> bool:
    """Say how far a replay on the farm has got, when it has trials left; whether it has."""
    if not progress.remaining:
        return False
    notes.print(
        f"[yellow]not finished[/yellow]: {progress.finished}/{progress.total} trials of "
        f"{progress.sweep_id} done. Watch it with `farm sweep status {progress.sweep_id} "
        f"--watch`, then run `farm replay {source_id}` again for the changes.",
        highlight=False,
    )
    return True


def submit_replay(plan: Plan, settings: Settings, engine: Engine, *, again: bool) -> None:
    """Record the replay's trials and publish them to their queue, like `farm sweep submit`;
    `again` (a --rerun of a recorded replay) makes every trial pending and publishes it anew."""
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


def report_changes(
    engine: Engine, plan: Plan, source_id: str, recorded: list[Any], listing: Listing
) -> None:
    """List what the replay changed, from the stored results of both sweeps (`recorded`: the
    source sweep's trials, already read), the servers' ignore rules applied; exit 1 on a
    change when `listing.fail_on_change`."""
    from mcp_farm.scheduler.submission.queries import recorded_calls, recorded_trials
    from mcp_farm.scheduler.submission.replay_changes import (
        changes,
        ignore_rules,
        listed_tools,
        tool_changes,
        trial_scenarios,
    )

    replay_id = plan.sweep_id
    replayed = recorded_trials(engine=engine, sweep_id=replay_id)
    found = changes(
        recorded,
        replayed,
        recorded_calls(engine=engine, sweep_id=source_id),
        recorded_calls(engine=engine, sweep_id=replay_id),
        ignore_rules(plan),
        trial_scenarios(plan),
    )
    was_tools = listed_tools(recorded)
    tools = tool_changes(was_tools, listed_tools(replayed))
    if listing.as_json:
        document = changes_document(source_id, replay_id, len(recorded), found, tools)
        typer.echo(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        print_tool_changes(tools, known=bool(was_tools))
        print_changes(found, len(recorded))
        console.print(f"[dim]farm compare {source_id} {replay_id}[/dim]", highlight=False)
    if listing.fail_on_change and (found or tools):
        listing.notes.print(
            f"[red]changed[/red]: {len(found)} trial(s), {len(tools)} tool(s) (--fail-on-change)",
            highlight=False,
        )
        raise typer.Exit(GATE_FAILED)


def changes_document(
    source_id: str,
    replay_id: str,
    total: int,
    found: list[TrialChange],
    tools: list[ToolChange],
) -> dict[str, Any]:
    """The changes as `farm replay --json` prints them (docs/replay.md, "For CI")."""
    return {
        "version": 1,
        "source": source_id,
        "replay": replay_id,
        "trials": total,
        "changed": len(found),
        "outcomes_changed": sum(1 for c in found if c.outcome_changed),
        "tools": [asdict(t) for t in tools],
        "changes": [
            {
                **dict(zip(KEY_FIELDS, change.key, strict=True)),
                "before": change.before,
                "after": change.after,
                "calls": [
                    {
                        "index": c.index,
                        "tool": c.tool,
                        "kind": c.kind,
                        "detail": c.detail,
                        "diff": c.diff,
                        "turn": c.turn,
                        "farm": c.farm,
                    }
                    for c in change.calls
                ],
                "turns": [asdict(t) for t in change.turns],
                "probes": [asdict(p) for p in change.probes],
            }
            for change in found
        ],
    }


KEY_FIELDS = ("model", "prompt", "scenario", "toolset", "repetition", "wording")
"""The names of a trial key's parts in `farm replay --json`."""


def print_tool_changes(tools: list[ToolChange], *, known: bool) -> None:
    if not known:
        console.print(
            "[dim]tool lists: not compared (the recording predates their record)[/dim]",
            highlight=False,
        )
    for t in tools:
        console.print(f"tool {escape(t.server)}.{escape(t.tool)}: {t.what}", highlight=False)


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
        for turn in change.turns:
            console.print(
                f"    turn {turn.turn}: {escape(turn.before)} → {escape(turn.after)}",
                highlight=False,
            )
        for call in change.calls:
            console.print(
                f"    {call.where} {escape(call.tool)}: {escape(call.what)}", highlight=False
            )
            for line in call.diff:
                console.print(f"      {escape(line)}", highlight=False, soft_wrap=True)
        for probe in change.probes:
            console.print(f"    {escape(probe.where)}: {escape(probe.what)}", highlight=False)
            for line in probe.diff:
                console.print(f"      {escape(line)}", highlight=False, soft_wrap=True)
