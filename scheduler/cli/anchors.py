"""`farm anchors lock|verify`: the drift guard over the judge, with locked anchor transcripts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mcp_farm.scheduler.cli.common import (
    GATE_FAILED,
    DataDirOption,
    DbOption,
    console,
    engine_from,
    settings_from,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from mcp_farm.scenarios.anchors import AnchorSet
    from mcp_farm.schema import JudgeSettings

DEFAULT_JUDGE_SWEEP = Path("scenarios/sweeps/code.yaml")

anchors_app = typer.Typer(no_args_is_help=True, help="The drift guard: locked anchor transcripts.")

FolderArg = Annotated[str, typer.Argument(help="Anchor folder (name under scenarios/anchors)")]
JudgeFrom = Annotated[
    Path,
    typer.Option("--judge-from", help="A sweep YAML whose `judge:` settings to use"),
]


def judge_settings(path: Path) -> JudgeSettings:
    """The `judge:` settings of a sweep file, which must name a judge model."""
    from mcp_farm.scheduler.submission.expand import load_sweep
    from mcp_farm.schema import SpecError

    sweep = load_sweep(path)
    if sweep.judge is None or sweep.judge.model is None:
        raise SpecError(str(path), "judge.model", "this sweep names no judge model")
    return sweep.judge


@anchors_app.command("lock")
def lock_cmd(
    folder: FolderArg = "code",
    threshold: Annotated[
        float, typer.Option(help="Spearman's ρ the judge must reach; kept in the sealed lock")
    ] = 0.85,
    allow_lower_threshold: Annotated[
        bool,
        typer.Option(
            "--allow-lower-threshold",
            help="Accept a threshold below 0.85 (every verdict shows the gate as lowered)",
        ),
    ] = False,
) -> None:
    """Freeze the anchor transcripts, what the judge is shown from their scenarios (reference
    answers, terms, citations), the rubric, the gold scores and the gate's threshold."""
    from mcp_farm.scenarios.anchors import THRESHOLD, anchor_folder, load_anchors, write_lock

    anchors = load_anchors(anchor_folder(folder))
    path = write_lock(anchors, threshold, allow_lower=allow_lower_threshold)
    lowered = f" (lowered below the seed's {THRESHOLD:g})" if threshold < THRESHOLD else ""
    console.print(
        f"locked {len(anchors.anchors)} anchors with their scenarios' reference answers and "
        f"terms, rubric {anchors.rubric_id}, gold scores and threshold ρ ≥ {threshold:g}"
        f"{lowered} in {path}"
    )


def endpoint_judge(
    judge: JudgeSettings,
    endpoint: str,
    model: str,
    api_key_env: str | None,
    *,
    check: bool = True,
) -> JudgeSettings:
    """The same judge settings, with the judge served by an OpenAI-compatible endpoint, checked
    before anything is judged (the endpoint answers and serves the model) unless `check` is
    off: nothing will be judged, and the endpoint is not asked."""
    import os

    from mcp_farm.scheduler.submission.expand import endpoint_target
    from mcp_farm.scheduler.submission.preflight import check_endpoints
    from mcp_farm.schema import get_settings

    target = endpoint_target(endpoint, model, api_key_env=api_key_env)
    timeout_s = get_settings().preflight_timeout_s
    notes = check_endpoints([target], timeout_s=timeout_s, env=os.environ) if check else []
    for note in notes:
        console.print(f"[yellow]warning:[/yellow] {note}", highlight=False)
    return judge.model_copy(update={"model": target})


@anchors_app.command("verify")
def verify_cmd(
    folder: FolderArg = "code",
    judge_from: JudgeFrom = DEFAULT_JUDGE_SWEEP,
    endpoint: Annotated[
        str | None,
        typer.Option(help="Judge with the model at this OpenAI-compatible endpoint (…/v1)"),
    ] = None,
    endpoint_model: Annotated[str, typer.Option(help="Model name at --endpoint")] = "default",
    api_key_env: Annotated[
        str | None,
        typer.Option(help="Environment variable holding --endpoint's API key, if it needs one"),
    ] = None,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Re-hash the anchors, re-judge them, and require Spearman's ρ against the gold scores
    to reach the lock's threshold (0.85 unless locked with another); exit 1 naming what
    changed otherwise. The verdict is recorded for reports. The judge is the one
    --judge-from names, or the model at --endpoint with that sweep's judge settings."""
    from mcp_farm.scenarios.anchors import (
        anchor_folder,
        load_anchors,
        lock_problems,
        lock_sha256,
        lock_threshold,
        read_lock,
        shown_folder,
    )
    from mcp_farm.schema import load_task
    from mcp_farm.schema.tasks.messages import (
        AnchorJudgingRequest,
        AnchorJudgingResult,
        read_result,
    )

    settings = settings_from(db, data_dir)
    # The lock first, then the files against it, both local and cheap: a broken or mismatched
    # lock is reported without asking the endpoint anything.
    read_lock(anchor_folder(folder))
    anchors = load_anchors(anchor_folder(folder))
    problems = lock_problems(anchors)
    threshold = lock_threshold(anchors.folder)
    judge = judge_settings(judge_from)
    if endpoint:
        judge = endpoint_judge(judge, endpoint, endpoint_model, api_key_env, check=not problems)
    rho: float | None = None
    if not problems:
        request = AnchorJudgingRequest(
            folder=str(anchors.folder), rubric=anchors.rubric_id, judge=judge
        )
        with console.status(f"judging {len(anchors.anchors)} anchors × {judge.runs} runs…"):
            found = read_result(
                "farm.judge_anchors",
                load_task("farm.judge_anchors")(request, settings),
                AnchorJudgingResult,
            )
        rho, problem = _agreement(anchors.gold, found.scores, threshold)
        problems += [problem] if problem else []
        console.print(
            f"judge {found.judge}: ρ = {rho:.3f} over {_pairs(anchors.gold)} anchor × criterion "
            f"scores ({found.unreadable} unreadable), {found.judge_s:.1f} s"
        )
    gate = Gate(shown_folder(anchors.folder), lock_sha256(anchors.folder), threshold)
    _record(engine_from(settings), judge, anchors, rho, problems, gate)
    if problems:
        console.print(f"[bold red]anchor gate failed[/bold red] {gate.said()}", highlight=False)
        for problem in problems:
            console.print(f"  ✗ {problem}", highlight=False)
        raise typer.Exit(GATE_FAILED)
    console.print(f"[green]anchor gate passed[/green] {gate.said()}", highlight=False)


def _pairs(gold: dict[str, dict[str, float]]) -> int:
    return sum(len(v) for v in gold.values())


def _agreement(
    gold: dict[str, dict[str, float]], judged: dict[str, dict[str, float | None]], threshold: float
) -> tuple[float, str]:
    """Spearman's ρ over every (anchor, criterion) pair; a missing judge score counts as 0."""
    from mcp_farm.scheduler.statistics.judge_variance import spearman

    keys = [(a, c) for a in sorted(gold) for c in sorted(gold[a])]
    xs = [gold[a][c] for a, c in keys]
    ys = [float(judged.get(a, {}).get(c) or 0.0) for a, c in keys]
    rho = spearman(xs, ys)
    if rho != rho or rho < threshold:  # NaN (a constant judge) fails too
        return rho, f"Spearman ρ = {rho:.3f} against the gold scores, below {threshold:g}"
    return rho, ""


@dataclass(frozen=True)
class Gate:
    """What one gate run verifies: the anchor folder, its lock's hash and the threshold."""

    folder: str
    lock: str
    threshold: float

    def said(self) -> str:
        """`(ρ ≥ 0.85; anchors scenarios/anchors/code, lock 1a2b3c4d5e6f)`, the threshold
        marked when it is below the seed's."""
        from mcp_farm.scenarios.anchors import THRESHOLD

        low = f", LOWERED below {THRESHOLD:g}" if self.threshold < THRESHOLD else ""
        lock = f"lock {self.lock[:12]}" if self.lock else "no lock"
        return f"(ρ ≥ {self.threshold:g}{low}; anchors {self.folder}, {lock})"


def _record(
    engine: Engine,
    judge: JudgeSettings,
    anchors: AnchorSet,
    rho: float | None,
    problems: list[str],
    gate: Gate,
) -> None:
    from mcp_farm.scheduler.scorecard.queries.answers import record_anchor_check

    assert judge.model is not None
    record_anchor_check(
        engine,
        judge_key=judge.model.key(),
        judge_model=judge.model.id,
        rubric_id=anchors.rubric_id,
        rubric_hash=anchors.rubric_hash,
        rho=None if rho is None or rho != rho else rho,
        passed=not problems,
        detail="; ".join(problems),
        folder=gate.folder,
        lock_sha256=gate.lock,
        threshold=gate.threshold,
    )
