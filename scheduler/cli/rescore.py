"""`farm rescore`: score a sweep's stored transcripts again, without the model."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from mcp_farm.scheduler.cli.anchors import judge_settings
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

    from mcp_farm.schema import JudgeSettings, Settings
    from mcp_farm.schema.tasks.messages import RescoreRequest, RescoreResult


def rescore(
    sweep_id: Annotated[str | None, typer.Argument(help="Sweep id; default: the latest")] = None,
    judge_from: Annotated[
        Path | None,
        typer.Option("--judge-from", help="Judge with this sweep YAML's `judge:` instead"),
    ] = None,
    rubric: Annotated[
        str | None, typer.Option(help="Use this rubric (scenarios/rubrics/<id>.yaml)")
    ] = None,
    distributed: Annotated[
        bool, typer.Option(help="Publish one task per trial to the judge's hardware queue")
    ] = False,
    db: DbOption = None,
    data_dir: DataDirOption = None,
    broker: BrokerOption = None,
) -> None:
    """Score a sweep's stored transcripts again — deterministic grade, grounding, keywords and
    judge — without running the model. Writes new rows under a new scoring id."""
    from mcp_farm.scenarios import load_rubric
    from mcp_farm.scheduler.operations.progress import latest_sweep_id
    from mcp_farm.scheduler.operations.queries import sweep_spec_json
    from mcp_farm.scheduler.report.terminal.answers import print_answers
    from mcp_farm.scheduler.scorecard.aggregate import scorecard_of
    from mcp_farm.scheduler.submission.queries import record_rescoring
    from mcp_farm.schema import JudgeSettings, SpecError, SweepSpec
    from mcp_farm.schema.tasks.messages import RescoreRequest

    settings = settings_from(db, data_dir, broker)
    engine = engine_from(settings)
    sweep_id = sweep_id or latest_sweep_id(engine=engine)
    spec = SweepSpec.model_validate_json(sweep_spec_json(engine=engine, sweep_id=sweep_id))
    judge = judge_settings(judge_from) if judge_from else (spec.judge or JudgeSettings())
    if rubric:
        load_rubric(rubric, "--rubric")
        judge = judge.model_copy(update={"rubric": rubric})
    trials, talks = _answer_trials(engine, sweep_id)
    if not trials and not talks:
        raise SpecError(
            "rescore",
            sweep_id,
            "no recorded trial of this sweep has an `answer`, turns or state probes",
        )
    scoring = record_rescoring(engine, sweep_id, judge, datetime.now(UTC).isoformat())
    if talks:
        # No answer to score (conversations, trials with probes): graded again, here.
        console.print(f"re-grading {len(talks)} trial(s) of {sweep_id} (turns or probes)")
        _run_here(
            [RescoreRequest(trial_id=t, scoring_id=scoring, judge=judge) for t in talks], settings
        )
    if not trials:
        return
    requests = [RescoreRequest(trial_id=t, scoring_id=scoring, judge=judge) for t in trials]
    console.print(f"rescoring {len(trials)} trial(s) of {sweep_id} as [bold]{scoring}[/bold]")
    if distributed:
        # The workers' results are not read back here: each trial's scores are in its row.
        _publish(requests, settings, judge)
        _wait(engine, sweep_id, scoring, len(trials))
    else:
        _run_here(requests, settings)
    card = scorecard_of(engine=engine, sweep_id=sweep_id, rebuild=True)
    if card.answers is not None:
        print_answers(card.answers, console)


def _answer_trials(engine: Engine, sweep_id: str) -> tuple[list[str], list[str]]:
    """Done trials (not infra errors) whose scenario asks for answer scoring, and the others
    to grade again: those of conversations (turn by turn) and of scenarios with state probes
    (their recorded findings judged again), with no answer to score."""
    from mcp_farm.scenarios import find_scenario
    from mcp_farm.scheduler.scorecard.queries.answers import answer_trial_payloads
    from mcp_farm.schema import TrialSpec

    keep, talks = [], []
    for trial_id, payload_json in answer_trial_payloads(engine, sweep_id):
        ref = TrialSpec.model_validate(json.loads(payload_json)).scenario
        scenario = find_scenario(ref.suite, ref.id, ref.version)
        if scenario.answer is not None:
            keep.append(trial_id)
        elif scenario.turns or scenario.user_sim or scenario.probes:
            talks.append(trial_id)
    return keep, talks


def _bar() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


def _run_here(requests: list[RescoreRequest], settings: Settings) -> None:
    from mcp_farm.schema import load_task
    from mcp_farm.schema.tasks.messages import RescoreResult, read_result

    task = load_task("farm.rescore_trial")
    results: list[RescoreResult] = []
    with _bar() as progress:
        bar = progress.add_task("rescoring", total=len(requests))
        for request in requests:
            results.append(
                read_result("farm.rescore_trial", task(request, settings), RescoreResult)
            )
            progress.update(bar, advance=1)
    print_regraded(results)


def regraded_lines(results: list[RescoreResult]) -> list[str]:
    """Each trial whose outcome or some probe's verdict changed on re-grading, as `farm
    replay` lists its changes: the trial (`id: before → after`, or its outcome where only a
    probe changed), then each probe (`turn 2 probe 'x': passed → failed`)."""
    lines = []
    for r in results:
        moved = r.outcome != r.recorded_outcome
        if not moved and not r.probes:
            continue
        verdict = f"{r.recorded_outcome} → {r.outcome}" if moved else r.outcome
        lines.append(f"  {r.trial_id}: {verdict}")
        lines += [f"    {p.where}: {p.change}" for p in r.probes]
    return lines


def print_regraded(results: list[RescoreResult]) -> None:
    lines = regraded_lines(results)
    if not lines:
        console.print(f"[green]no change[/green]: all {len(results)} trials graded as recorded")
        return
    outcomes = sum(1 for r in results if r.outcome != r.recorded_outcome)
    changed = sum(1 for r in results if r.outcome != r.recorded_outcome or r.probes)
    console.print(
        f"[bold]{changed}[/bold] of {len(results)} trials changed on re-grading "
        f"({outcomes} outcome(s)):",
        highlight=False,
    )
    for line in lines:
        console.print(escape(line), highlight=False, soft_wrap=True)


def _publish(requests: list[RescoreRequest], settings: Settings, judge: JudgeSettings) -> None:
    from mcp_farm.scheduler.submission.publish import publish_tasks
    from mcp_farm.schema.tasks.broker import make_celery, queue_for

    hardware = judge.model.hardware if judge.model else "cpu"
    queue = queue_for(hardware)
    sent = publish_tasks(make_celery(settings), "farm.rescore_trial", requests, queue)
    console.print(f"published {sent} rescore task(s) to {queue}")


def _wait(engine: Engine, sweep_id: str, scoring: str, total: int, limit_s: float = 3600) -> None:
    """Follow the rescore until every trial has its row (a bar; bounded by `limit_s`)."""
    from mcp_farm.scheduler.scorecard.queries.answers import scored_count
    from mcp_farm.schema import SpecError

    deadline = time.monotonic() + limit_s
    with _bar() as progress:
        bar = progress.add_task("rescoring on workers", total=total)
        done = 0
        while done < total and time.monotonic() < deadline:
            done = scored_count(engine, sweep_id, scoring)
            progress.update(bar, completed=done)
            time.sleep(0.5)
    if done < total:
        raise SpecError("rescore", scoring, f"only {done}/{total} rescored within {limit_s:g} s")
