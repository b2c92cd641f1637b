"""The embedded transport: every trial runs in this process, through the same task function."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from mcp_farm.scenarios import find_scenario
from mcp_farm.scheduler.report.terminal.lines import (
    LinePacer,
    run_line,
)
from mcp_farm.scheduler.submission.expand import Plan
from mcp_farm.scheduler.submission.queries import (
    record_plan,
    runnable_ids,
)
from mcp_farm.schema import (
    Settings,
    TrialSpec,
    load_task,
)
from mcp_farm.schema.tasks.messages import (
    AggregateRequest,
    AggregateResult,
    TrialDone,
    read_result,
    read_summary,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


def by_shared_prompt(trials: list[TrialSpec]) -> list[TrialSpec]:
    """The trials with those that open with the same prompt back to back: same model, prompt
    config, tool set and servers (whose tools the prompt lists), so a local model reuses the
    prompt it has already read. Otherwise in plan order."""
    servers: dict[tuple[str, str], tuple[str, ...]] = {}

    def key(t: TrialSpec) -> tuple[str, str, str, tuple[str, ...]]:
        ref = (t.scenario.suite, t.scenario.id)
        if ref not in servers:
            servers[ref] = tuple(find_scenario(*ref).servers)
        return (t.model.id, t.prompt.id, t.toolset_id, servers[ref])

    firsts: dict[tuple[str, str, str, tuple[str, ...]], int] = {}
    for i, t in enumerate(trials):
        firsts.setdefault(key(t), i)
    return sorted(trials, key=lambda t: firsts[key(t)])


def run_embedded(
    *, plan: Plan, settings: Settings, engine: Engine, console: Console, rerun: bool = False
) -> Counter[str]:
    """Record the plan, then run every trial still to run, with a progress bar (or, when the
    output is not a terminal, a plain progress line now and then)."""
    record_plan(engine=engine, plan=plan)
    todo_ids = (
        {t.trial_id for t in plan.trials}
        if rerun
        else runnable_ids(engine=engine, sweep_id=plan.sweep_id)
    )
    todo = by_shared_prompt([t for t in plan.trials if t.trial_id in todo_ids])
    skipped = len(plan.trials) - len(todo)
    if skipped:
        console.print(
            f"[dim]{skipped} trial(s) already recorded for {plan.sweep_id}; "
            "running the rest (use --rerun to run all again)[/dim]"
        )
    task = load_task("farm.run_trial")
    outcomes: Counter[str] = Counter()
    in_model: float | None = None  # None while no trial measured it (an agent's did not)
    unmeasured = 0  # agent trials whose model calls did not pass the farm
    started = time.perf_counter()

    def run_one(trial: TrialSpec) -> None:
        nonlocal in_model, unmeasured
        # takeover: a trial left `running` here can only be a killed earlier run's.
        summary = read_summary(task(trial, settings, force=rerun, takeover=True))
        if isinstance(summary, TrialDone):
            outcomes[summary.outcome] += 1
            if summary.model_s is not None:
                in_model = (in_model or 0.0) + summary.model_s
            elif trial.model.adapter == "agent":
                unmeasured += 1
        else:
            outcomes["skipped"] += 1

    if console.is_terminal:
        _with_bar(plan.sweep.name, todo, run_one, outcomes, console)
    else:
        _with_lines(todo, run_one, outcomes, console)
    aggregate = load_task("farm.aggregate")
    request = AggregateRequest(sweep_id=plan.sweep_id)
    read_result("farm.aggregate", aggregate(request, settings), AggregateResult)
    if todo:
        wall_s = time.perf_counter() - started
        console.print(model_share(in_model, wall_s, unmeasured=unmeasured), highlight=False)
    return outcomes


def model_share(in_model_s: float | None, wall_s: float, *, unmeasured: int = 0) -> str:
    """How much of a run's wall time was spent waiting for the model; the rest is the farm's
    own (loading the model, starting servers, tool calls, grading, storing, the scorecard).
    `unmeasured`: the run's agent trials whose model calls did not pass the farm; the time is
    then the other trials' alone and the line says so, never implying a total. None: no trial
    measured it."""
    if in_model_s is None and unmeasured:
        return (
            f"time in the model not measured ({wall_s:.1f} s wall): the agents' model calls "
            "did not pass the farm"
        )
    in_model_s = in_model_s or 0.0  # no trial reached the model (none could run)
    share = 100 * in_model_s / wall_s if wall_s > 0 else 0.0
    if unmeasured:
        trials = "trial" if unmeasured == 1 else "trials"
        return (
            f"time in the model {in_model_s:.1f} s of {wall_s:.1f} s wall ({share:.0f}%), the "
            f"measured trials' alone ({unmeasured} agent {trials} not measured); the rest was "
            "the farm and the agents"
        )
    return (
        f"time in the model {in_model_s:.1f} s of {wall_s:.1f} s wall ({share:.0f}%); the rest "
        "was the farm: loading the model, starting servers, tool calls, grading, storing"
    )


def _with_bar(
    name: str,
    todo: list[TrialSpec],
    run_one: Callable[[TrialSpec], None],
    outcomes: Counter[str],
    console: Console,
) -> None:
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
        bar = progress.add_task(name, total=len(todo), passes=0)
        for trial in todo:
            progress.update(
                bar, description=f"{trial.model.id} · {trial.prompt.id} · {trial.scenario.id}"
            )
            run_one(trial)
            progress.update(bar, advance=1, passes=outcomes["pass"])
        progress.update(bar, description=name)


def _with_lines(
    todo: list[TrialSpec],
    run_one: Callable[[TrialSpec], None],
    outcomes: Counter[str],
    console: Console,
) -> None:
    # A bar drawn into a log file only appears when it stops; ordinary lines appear as they go.
    pacer = LinePacer(total=len(todo))
    started = time.monotonic()
    for done, trial in enumerate(todo, start=1):
        run_one(trial)
        if pacer.due(done):
            line = run_line(
                done=done,
                total=len(todo),
                passes=outcomes["pass"],
                elapsed_s=time.monotonic() - started,
            )
            console.print(line, highlight=False, markup=False)
