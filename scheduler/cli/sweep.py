"""`farm sweep …`: submit a sweep to the distributed farm, watch it, cancel or resume it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from mcp_farm.scheduler.cli.common import (
    BrokerOption,
    DbOption,
    PreflightOption,
    UserCheckOption,
    calibrate_user_model,
    console,
    engine_from,
    preflight,
    print_replay_note,
    settings_from,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from mcp_farm.scheduler.operations.progress import SweepProgress

sweep_app = typer.Typer(no_args_is_help=True, help="Distributed sweeps: submit, status, control.")

SweepIdArg = Annotated[str | None, typer.Argument(help="Sweep id; default: the latest")]


@sweep_app.command("submit")
def submit_cmd(
    sweep_file: Annotated[Path, typer.Argument(help="A sweep YAML")],
    db: DbOption = None,
    broker: BrokerOption = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the plan; record, publish and check nothing (no network)"
        ),
    ] = False,
    check: PreflightOption = None,
    user_check: UserCheckOption = None,
) -> None:
    """Expand a sweep, record its trials as pending and publish one task per trial.

    First checks that every openai model's endpoint answers from here and serves the model,
    and that every replay target's recorded sweep holds each trial to replay (exit 2, nothing
    recorded, when one does not).
    """
    from mcp_farm.scheduler.submission.expand import expand, load_sweep
    from mcp_farm.scheduler.submission.replay import resolve_replays
    from mcp_farm.scheduler.submission.submit import per_queue, plan_summary, route, submit
    from mcp_farm.schema.tasks.broker import make_celery

    settings = settings_from(db, broker=broker)
    plan = expand(load_sweep(sweep_file), str(sweep_file))
    console.print(f"[bold]{plan.sweep_id}[/bold]: {plan_summary(plan)}")
    if dry_run:
        queues = route(plan, settings)
        console.print("dry run: nothing recorded or published")
        table = Table(header_style="bold")
        table.add_column("queue")
        table.add_column("trials", justify="right")
        for queue, n in sorted(per_queue(plan, queues).items()):
            table.add_row(queue, str(n))
        console.print(table)
        return
    warn_if_local(settings.resolved_database_url(), Console(stderr=True))
    preflight(plan.sweep, settings, check)
    calibrate_user_model(plan.sweep, settings, user_check)
    engine = engine_from(settings)
    plan = resolve_replays(plan, engine)  # a replay target's turns, or the error, come first
    started = time.perf_counter()
    with console.status("recording and publishing trials…"):
        result = submit(plan=plan, settings=settings, engine=engine, app=make_celery(settings))
    if not result.new:
        console.print(
            "[yellow]already submitted[/yellow]: no trial was recorded or published again. "
            f"See `farm sweep status {plan.sweep_id}`; `farm sweep resume {plan.sweep_id}` "
            "re-publishes the trials still pending."
        )
        return
    queued = ", ".join(f"{q} {n}" for q, n in sorted(result.per_queue.items()))
    console.print(
        f"published {result.published} trials in {time.perf_counter() - started:.1f} s ({queued})"
    )
    console.print(f"watch: farm sweep status {plan.sweep_id} --watch")


def warn_if_local(database_url: str, notes: Console) -> None:
    """Warn (not fail) when the sweep is about to go into a SQLite file.

    Workers on other machines read and write the same database as the scheduler; a SQLite
    file on this machine is one they cannot reach, so their trials would never be recorded
    here. Tests and single-machine setups use SQLite deliberately, so this is only a warning.
    """
    if not database_url.startswith("sqlite"):
        return
    notes.print(
        "[yellow]warning:[/yellow] this sweep is recorded in a SQLite file on this machine; "
        "workers on other machines will not see it. For the distributed farm set "
        "FARM_DATABASE_URL (or --db) to PostgreSQL; to run a sweep here in one process, use "
        "`farm run SWEEP.yaml`.",
        highlight=False,
    )


@sweep_app.command("status")
def status_cmd(
    sweep_id: SweepIdArg = None,
    db: DbOption = None,
    watch: Annotated[bool, typer.Option("--watch", help="Refresh until the sweep ends")] = False,
    every: Annotated[float, typer.Option(help="Seconds between refreshes")] = 2.0,
) -> None:
    """Counts by state and queue, the pass rate so far and an ETA."""
    from mcp_farm.scheduler.operations.progress import latest_sweep_id, sweep_progress
    from mcp_farm.scheduler.report.terminal.ops import progress_view

    engine = engine_from(settings_from(db))
    sweep_id = sweep_id or latest_sweep_id(engine=engine)
    progress = sweep_progress(engine=engine, sweep_id=sweep_id)
    print_replay_note(engine, sweep_id, console)
    if not watch:
        console.print(progress_view(progress))
        return
    if not console.is_terminal:
        _watch_in_lines(engine, progress, every)
        console.print(f"report: farm report {sweep_id}")
        return
    with Live(progress_view(progress), console=console, refresh_per_second=4) as live:
        while progress.remaining:
            time.sleep(every)
            progress = sweep_progress(engine=engine, sweep_id=sweep_id)
            live.update(progress_view(progress))
    console.print(f"report: farm report {sweep_id}")


def _watch_in_lines(engine: Engine, progress: SweepProgress, every: float) -> None:
    """Watch a sweep as plain lines (a live view written to a log shows only its last frame)."""
    from mcp_farm.scheduler.operations.progress import sweep_progress
    from mcp_farm.scheduler.report.terminal.lines import LinePacer
    from mcp_farm.scheduler.report.terminal.ops import progress_line

    pacer = LinePacer(total=progress.total)
    while True:
        if pacer.due(progress.finished):
            console.print(progress_line(progress), highlight=False, markup=False)
        if not progress.remaining:
            return
        time.sleep(every)
        progress = sweep_progress(engine=engine, sweep_id=progress.sweep_id)


@sweep_app.command("cancel")
def cancel_cmd(sweep_id: Annotated[str, typer.Argument()], db: DbOption = None) -> None:
    """Cancel the trials not run yet (running ones finish and are recorded)."""
    from mcp_farm.scheduler.operations.control import cancel

    n = cancel(engine=engine_from(settings_from(db)), sweep_id=sweep_id)
    console.print(f"cancelled {n} pending trial(s) of {sweep_id}; `farm sweep resume` undoes it")


@sweep_app.command("resume")
def resume_cmd(
    sweep_id: Annotated[str, typer.Argument()], db: DbOption = None, broker: BrokerOption = None
) -> None:
    """Re-publish what the sweep still needs and the broker no longer holds: pending, cancelled
    and infra_error trials, and running trials whose worker died."""
    from mcp_farm.scheduler.operations.control import resume
    from mcp_farm.schema.tasks.broker import make_celery

    settings = settings_from(db, broker=broker)
    done = resume(
        engine=engine_from(settings),
        app=make_celery(settings),
        sweep_id=sweep_id,
        settings=settings,
    )
    console.print(
        f"re-published {done.published} trial(s) of {sweep_id}; {done.still_queued} still "
        f"queued in the broker were left alone; {done.requeued} abandoned by a dead worker "
        "were given back to the queue"
    )
