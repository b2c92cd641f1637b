"""How fast a recorded sweep's calls are replayed against the fixture servers (`farm replay`).

    .venv/bin/python -m bench.replay [--trials 1000]

Records a sweep of `--trials` trials embedded, in a fresh SQLite file (a scripted ideal agent on
`fs.list-desktop`: one tool call on the filesystem fixture server, then the answer), then
replays it the way `farm replay` does: the recorded turns given again by the `replay` adapter,
the calls sent to the servers as they are defined now, graded and recorded as a new sweep. The
embedded run keeps its servers warm between trials. Prints the wall time and trials per second
of the recording and of the replay, and how many trials the replay found changed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.submission.embedded import run_embedded
from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.scheduler.submission.queries import recorded_calls, recorded_trials
from mcp_farm.scheduler.submission.replay import replay_spec, with_recordings
from mcp_farm.scheduler.submission.replay_changes import changes
from mcp_farm.schema import ModelTarget, ScenarioSelection, SweepSpec, get_settings
from mcp_farm.schema.db import init_db, make_engine

console = Console()
SCENARIO = next(s for s in load_suite("basic").scenarios if s.id == "fs.list-desktop")


def ideal() -> list[dict[str, object]]:
    calls: list[dict[str, object]] = [
        {"call": {"name": step.names[0], "arguments": step.example or {}}}
        for step in SCENARIO.expect
    ]
    return [*calls, {"answer": SCENARIO.example_answer or "done"}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        settings = get_settings().model_copy(
            update={"data_dir": Path(scratch), "database_url": None}
        )
        engine = make_engine(settings.resolved_database_url())
        init_db(engine)
        sweep = SweepSpec(
            name="replay-bench",
            models=[ModelTarget(id="ideal", adapter="scripted", model="x", script=ideal())],
            prompts=["native"],
            scenarios=ScenarioSelection(ids=[SCENARIO.id]),
            repetitions=args.trials,
        )
        plan = expand(sweep, "bench")
        quiet = Console(quiet=True)
        started = time.perf_counter()
        run_embedded(plan=plan, settings=settings, engine=engine, console=quiet)
        recorded_s = time.perf_counter() - started

        recorded = recorded_trials(engine=engine, sweep_id=plan.sweep_id)
        replay = with_recordings(
            expand(replay_spec(sweep, plan.sweep_id), "bench"), recorded, plan.sweep_id
        )
        started = time.perf_counter()
        run_embedded(plan=replay, settings=settings, engine=engine, console=quiet)
        replay_s = time.perf_counter() - started
        found = changes(
            recorded,
            recorded_trials(engine=engine, sweep_id=replay.sweep_id),
            recorded_calls(engine=engine, sweep_id=plan.sweep_id),
            recorded_calls(engine=engine, sweep_id=replay.sweep_id),
        )
        engine.dispose()
    table = Table(title=f"{args.trials} trials of {SCENARIO.id}, embedded, SQLite")
    for head in ("run", "wall s", "trials/s"):
        table.add_column(head, justify="right" if head != "run" else "left")
    table.add_row(
        "recording (scripted model)", f"{recorded_s:.1f}", f"{args.trials / recorded_s:.1f}"
    )
    table.add_row("replay (no model)", f"{replay_s:.1f}", f"{args.trials / replay_s:.1f}")
    console.print(table)
    console.print(f"trials the replay found changed: {len(found)}")


if __name__ == "__main__":
    main()
