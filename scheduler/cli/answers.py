"""`farm anchors lock|verify` (the drift guard) and `farm rescore` (score stored transcripts
again, without the model)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from sqlalchemy import text
from sqlalchemy.engine import Engine

from mcp_farm.scenarios import (
    find_scenario,
    load_rubric,
)
from mcp_farm.scenarios.anchors import (
    THRESHOLD,
    AnchorSet,
    anchor_folder,
    load_anchors,
    lock_problems,
    write_lock,
)
from mcp_farm.scheduler.cli.common import (
    BrokerOption,
    DataDirOption,
    DbOption,
    console,
    engine_from,
    settings_from,
)
from mcp_farm.scheduler.operations.progress import (
    latest_sweep_id,
    require_sweep,
)
from mcp_farm.scheduler.report.terminal.answers import print_answers
from mcp_farm.scheduler.scorecard.aggregate import scorecard_of
from mcp_farm.scheduler.statistics.judge_variance import spearman
from mcp_farm.scheduler.submission.expand import load_sweep
from mcp_farm.scheduler.submission.submit import record_scoring
from mcp_farm.schema import (
    JudgeSettings,
    Settings,
    SpecError,
    SweepSpec,
    TrialSpec,
    load_task,
)
from mcp_farm.schema.broker import (
    make_celery,
    queue_for,
)
from mcp_farm.schema.db import (
    AnchorCheckRow,
    session_scope,
)

GATE_FAILED = 1
DEFAULT_JUDGE_SWEEP = Path("scenarios/sweeps/code.yaml")

anchors_app = typer.Typer(no_args_is_help=True, help="The drift guard: locked anchor transcripts.")

FolderArg = Annotated[str, typer.Argument(help="Anchor folder (name under scenarios/anchors)")]
JudgeFrom = Annotated[
    Path,
    typer.Option("--judge-from", help="A sweep YAML whose `judge:` settings to use"),
]


def _judge_settings(path: Path) -> JudgeSettings:
    sweep = load_sweep(path)
    if sweep.judge is None or sweep.judge.model is None:
        raise SpecError(str(path), "judge.model", "this sweep names no judge model")
    return sweep.judge


@anchors_app.command("lock")
def lock_cmd(folder: FolderArg = "code") -> None:
    """Freeze the anchor transcripts, the rubric and the gold scores by SHA256."""
    anchors = load_anchors(anchor_folder(folder))
    path = write_lock(anchors)
    console.print(
        f"locked {len(anchors.anchors)} anchors, rubric {anchors.rubric_id} and gold scores "
        f"in {path}"
    )


@anchors_app.command("verify")
def verify_cmd(
    folder: FolderArg = "code",
    judge_from: JudgeFrom = DEFAULT_JUDGE_SWEEP,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Re-hash the anchors, re-judge them, and require Spearman's ρ ≥ 0.85 against the gold
    scores; exit 1 naming what changed otherwise. The verdict is recorded for reports."""
    settings = settings_from(db, data_dir)
    anchors = load_anchors(anchor_folder(folder))
    judge = _judge_settings(judge_from)
    problems = lock_problems(anchors)
    rho: float | None = None
    if not problems:
        with console.status(f"judging {len(anchors.anchors)} anchors × {judge.runs} runs…"):
            found = load_task("farm.judge_anchors")(
                {
                    "folder": str(anchors.folder),
                    "rubric": anchors.rubric_id,
                    "judge": judge.model_dump(mode="json"),
                },
                settings,
            )
        rho, problem = _agreement(anchors.gold, found["scores"])
        problems += [problem] if problem else []
        console.print(
            f"judge {found['judge']}: ρ = {rho:.3f} over {_pairs(anchors.gold)} anchor × criterion "
            f"scores ({found['unreadable']} unreadable), {found['judge_s']:.1f} s"
        )
    _record(engine_from(settings), judge, anchors, rho, problems)
    if problems:
        console.print("[bold red]anchor gate failed[/bold red]")
        for problem in problems:
            console.print(f"  ✗ {problem}", highlight=False)
        raise typer.Exit(GATE_FAILED)
    console.print(f"[green]anchor gate passed[/green] (ρ ≥ {THRESHOLD})")


def _pairs(gold: dict[str, dict[str, float]]) -> int:
    return sum(len(v) for v in gold.values())


def _agreement(
    gold: dict[str, dict[str, float]], judged: dict[str, dict[str, float | None]]
) -> tuple[float, str]:
    """Spearman's ρ over every (anchor, criterion) pair; a missing judge score counts as 0."""
    keys = [(a, c) for a in sorted(gold) for c in sorted(gold[a])]
    xs = [gold[a][c] for a, c in keys]
    ys = [float(judged.get(a, {}).get(c) or 0.0) for a, c in keys]
    rho = spearman(xs, ys)
    if rho != rho or rho < THRESHOLD:  # NaN (a constant judge) fails too
        return rho, f"Spearman ρ = {rho:.3f} against the gold scores, below {THRESHOLD}"
    return rho, ""


def _record(
    engine: Engine, judge: JudgeSettings, anchors: AnchorSet, rho: float | None, problems: list[str]
) -> None:
    assert judge.model is not None
    with session_scope(engine) as session:
        session.add(
            AnchorCheckRow(
                judge_key=judge.model.key(),
                judge_model=judge.model.id,
                rubric_id=anchors.rubric_id,
                rubric_hash=anchors.rubric_hash,
                rho=None if rho is None or rho != rho else rho,
                passed=not problems,
                detail="; ".join(problems),
                checked_at=datetime.now(UTC),
            )
        )


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
    settings = settings_from(db, data_dir, broker)
    engine = engine_from(settings)
    sweep_id = sweep_id or latest_sweep_id(engine=engine)
    with session_scope(engine) as session:
        spec = SweepSpec.model_validate_json(require_sweep(session, sweep_id).spec_json)
    judge = _judge_settings(judge_from) if judge_from else (spec.judge or JudgeSettings())
    if rubric:
        load_rubric(rubric, "--rubric")
        judge = judge.model_copy(update={"rubric": rubric})
    trials = _answer_trials(engine, sweep_id)
    if not trials:
        raise SpecError("rescore", sweep_id, "no recorded trial of this sweep has an `answer`")
    with engine.begin() as conn:
        scoring = record_scoring(conn, sweep_id, judge, "rescore", datetime.now(UTC).isoformat())
    payloads = [
        {"trial_id": t, "scoring_id": scoring, "judge": judge.model_dump(mode="json")}
        for t in trials
    ]
    console.print(f"rescoring {len(trials)} trial(s) of {sweep_id} as [bold]{scoring}[/bold]")
    if distributed:
        _publish(payloads, settings, judge)
        _wait(engine, sweep_id, scoring, len(trials))
    else:
        _run_here(payloads, settings)
    card = scorecard_of(engine=engine, sweep_id=sweep_id, rebuild=True)
    if card.answers is not None:
        print_answers(card.answers, console)


def _answer_trials(engine: Engine, sweep_id: str) -> list[str]:
    """Done trials (not infra errors) whose scenario asks for answer scoring."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "select trial_id, payload_json from trial where sweep_id = :s and status = 'done'"
                " and outcome <> 'infra_error' order by trial_id"
            ),
            {"s": sweep_id},
        ).all()
    keep = []
    for r in rows:
        ref = TrialSpec.model_validate(json.loads(r.payload_json)).scenario
        if find_scenario(ref.suite, ref.id, ref.version).answer is not None:
            keep.append(r.trial_id)
    return keep


def _bar() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


def _run_here(payloads: list[dict[str, Any]], settings: Settings) -> None:
    task = load_task("farm.rescore_trial")
    changed = 0
    with _bar() as progress:
        bar = progress.add_task("rescoring", total=len(payloads))
        for payload in payloads:
            summary = task(payload, settings)
            changed += summary["outcome"] != summary["recorded_outcome"]
            progress.update(bar, advance=1)
    console.print(f"deterministic outcomes that changed on re-grading: {changed}")


def _publish(payloads: list[dict[str, Any]], settings: Settings, judge: JudgeSettings) -> None:
    hardware = judge.model.hardware if judge.model else "cpu"
    app = make_celery(settings)
    queue = queue_for(hardware)
    for payload in payloads:
        app.send_task("farm.rescore_trial", args=[payload], queue=queue)
    console.print(f"published {len(payloads)} rescore task(s) to {queue}")


def _wait(engine: Engine, sweep_id: str, scoring: str, total: int, limit_s: float = 3600) -> None:
    """Follow the rescore until every trial has its row (a bar; bounded by `limit_s`)."""
    deadline = time.monotonic() + limit_s
    with _bar() as progress:
        bar = progress.add_task("rescoring on workers", total=total)
        done = 0
        while done < total and time.monotonic() < deadline:
            with engine.connect() as conn:
                done = conn.execute(
                    text(
                        "select count(*) from answer_score where sweep_id = :s and scoring_id = :c"
                    ),
                    {"s": sweep_id, "c": scoring},
                ).scalar_one()
            progress.update(bar, completed=done)
            time.sleep(0.5)
    if done < total:
        raise SpecError("rescore", scoring, f"only {done}/{total} rescored within {limit_s:g} s")
