"""The embedded transport: every trial runs in this process, through the same task function."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from sqlalchemy.engine import Engine

from scheduler.expand import Plan
from scheduler.submit import record_plan, runnable_ids
from schema import FarmError, Settings

TaskFn = Callable[[dict[str, Any], Settings], dict[str, Any]]


def load_task(name: str) -> TaskFn:
    """A task function by its published name (entry-point group `farm.tasks`)."""
    for ep in entry_points(group="farm.tasks"):
        if ep.name == name:
            fn: TaskFn = ep.load()
            return fn
    raise FarmError(
        f"no task named {name!r} is installed: reinstall the project (`pip install -e .`) "
        "so its entry points are registered"
    )


def run_embedded(
    *, plan: Plan, settings: Settings, engine: Engine, console: Console, rerun: bool = False
) -> Counter[str]:
    """Record the plan, then run every trial still to run, with a progress bar."""
    record_plan(engine=engine, plan=plan)
    todo_ids = (
        {t.trial_id for t in plan.trials}
        if rerun
        else runnable_ids(engine=engine, sweep_id=plan.sweep_id)
    )
    todo = [t for t in plan.trials if t.trial_id in todo_ids]
    skipped = len(plan.trials) - len(todo)
    if skipped:
        console.print(
            f"[dim]{skipped} trial(s) already recorded for {plan.sweep_id}; "
            "running the rest (use --rerun to run all again)[/dim]"
        )
    task = load_task("farm.run_trial")
    outcomes: Counter[str] = Counter()
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("pass {task.fields[passes]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task(plan.sweep.name, total=len(todo), passes=0)
        for trial in todo:
            progress.update(
                bar, description=f"{trial.model.id} · {trial.prompt.id} · {trial.scenario.id}"
            )
            summary = task(trial.model_dump(mode="json"), settings)
            outcomes[summary["outcome"]] += 1
            progress.update(bar, advance=1, passes=outcomes["pass"])
        progress.update(bar, description=plan.sweep.name)
    return outcomes
