"""One measured split of a pass rate's variance between the agent and the simulated user.

    .venv/bin/python -m bench.usersim_variance [--repetitions 8] [--seeds 8]

Runs a small sweep embedded, in a fresh SQLite file: two scripted agents (`steady`, `sloppy`)
on one simulated-user scenario (`usersim.dentist-ask-time`), every agent repetition crossed with every
user seed (`user_model.seeds`). Agent and user are scripted *stochastic* models: at the point
that decides the trial, each picks one of several replies by its sampling seed (a script item
`{"any": [...]}`), so the agent's repetition and the user's seed both matter, as a sampled
model's would. The agent sometimes books the wrong end time; the user sometimes leaves before
answering. Prints the scorecard's variance table (σ² agent, σ² user, σ² interaction +
residual, the user's ICC). Scripted rather
than the bundled local model so it runs in well under a minute on a laptop: the numbers show
the machinery, not any real model's user.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from mcp_farm.scheduler.report.cells import VARIANCE_HEADS, variance_rows
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.submission.embedded import run_embedded
from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.schema import ModelTarget, ScenarioSelection, SweepSpec, UserModel, get_settings
from mcp_farm.schema.db import init_db, make_engine

console = Console()
DENTIST = "usersim.dentist-ask-time"
STOP = {"answer": "Thanks, that's all. ###STOP###"}
LEAVES = {"answer": "I'll do it myself later. ###STOP###"}


def _call(name: str, **arguments: str) -> dict[str, Any]:
    return {"call": {"name": name, "arguments": arguments}}


def _dentist(end: str) -> dict[str, Any]:
    return _call("create_event", title="Dentist (Dr Okafor)", start="2026-03-12T15:00", end=end)


def agent_script(right: int, wrong: int) -> list[dict[str, Any]]:
    """Ask, then book: the right end time in `right` picks of `right` + `wrong`, else 15:30."""
    right_call, bad = _dentist("2026-03-12T15:45"), _dentist("2026-03-12T15:30")
    return [
        {"answer": "What time does it start, and how long is it?"},
        {"any": [right_call] * right + [bad] * wrong},
        {"answer": "Done: Dentist on Thursday 12 March."},
    ]


USER = [
    # Answer in 2 picks of 3, leave before answering in 1.
    {"any": [{"answer": "It starts at 15:00 and takes 45 minutes."}] * 2 + [LEAVES]},
    STOP,
]


def sweep_of(repetitions: int, seeds: int) -> SweepSpec:
    """The crossed sweep: agents `steady` (wrong in 1 pick of 3) and `sloppy` (2 of 3) on the
    dentist scenario, the scripted stochastic user, `repetitions` × `seeds` trials each."""
    return SweepSpec(
        name="usersim-variance",
        models=[
            ModelTarget(id="steady", adapter="scripted", model="x", script=agent_script(2, 1)),
            ModelTarget(id="sloppy", adapter="scripted", model="x", script=agent_script(1, 2)),
        ],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=["usersim"], ids=[DENTIST]),
        repetitions=repetitions,
        paraphrases="verbatim",
        user_model=UserModel(
            model=ModelTarget(id="user", adapter="scripted", model="x", script=USER),
            temperature=1.0,
            seed=100,
            seeds=seeds,
        ),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        settings = get_settings().model_copy(
            update={"data_dir": Path(scratch), "database_url": None}
        )
        engine = make_engine(settings.resolved_database_url())
        init_db(engine)
        started = time.perf_counter()
        plan = expand(sweep_of(args.repetitions, args.seeds), "bench")
        run_embedded(plan=plan, settings=settings, engine=engine, console=Console(quiet=True))
        took = time.perf_counter() - started
        card = build_scorecard(engine=engine, sweep_id=plan.sweep_id)
    table = Table(header_style="bold", pad_edge=False)
    for head in ["model", "pass rate", *VARIANCE_HEADS]:
        table.add_column(head)
    rates = {u.model: f"{u.passed}/{u.trials}" for u in card.simulated_users}
    for row in variance_rows(card):
        table.add_row(row[0], rates[row[0]], *row[2:])
    console.print(table)
    console.print(f"{len(plan.trials)} trials, embedded, in {took:.1f} s")


if __name__ == "__main__":
    main()
