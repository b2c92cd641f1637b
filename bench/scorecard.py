"""How long a scorecard takes to build from 10k, 100k and 1M stored trials in PostgreSQL.

    .venv/bin/python -m bench.scorecard [--sizes 10000,100000,1000000]

Each size gets a throwaway database loaded with a synthetic sweep (2 models × 2 prompt
configs × 250 scenarios × as many repetitions as it takes; one to three tool calls per trial),
then the scorecard is built three times and the best and median are printed. Loading is not
timed. The farm builds the same scorecard in the aggregate task and in `farm report --rebuild`.
"""

from __future__ import annotations

import argparse
import statistics
import time

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from bench.pipeline import database
from bench.synthetic import load, scenarios, trials
from scheduler.scorecard import build_scorecard

CONFIGS = [("model-a", "native"), ("model-a", "json"), ("model-b", "native"), ("model-b", "json")]
SCENARIOS = 250
RUNS = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    args = parser.parse_args()
    console = Console()
    table = Table(title="Scorecard build time (PostgreSQL)", title_justify="left")
    for head in ("trials", "tool calls", "rows in card", "best", "median", "load (untimed)"):
        table.add_column(head, justify="right")
    picked = scenarios(SCENARIOS, seed=1)
    for size in (int(s) for s in args.sizes.split(",")):
        reps = max(1, size // (len(CONFIGS) * SCENARIOS))
        with database() as engine, Progress(console=console, transient=True) as progress:
            task = progress.add_task(f"loading {size:,} trials", total=None)
            started = time.perf_counter()
            count = load(
                engine,
                "bench",
                trials("bench", CONFIGS, picked, reps, lambda m, p, s: 0.7, seed=size),
            )
            loaded = time.perf_counter() - started
            progress.update(task, description=f"building the scorecard of {count:,} trials")
            times = []
            for _ in range(RUNS):
                started = time.perf_counter()
                card = build_scorecard(engine=engine, sweep_id="bench")
                times.append(time.perf_counter() - started)
            calls = sum(c.calls for c in card.tool_calls)
        table.add_row(
            f"{count:,}",
            f"{calls:,}",
            str(len(card.rows)),
            f"{min(times):.2f} s",
            f"{statistics.median(times):.2f} s",
            f"{loaded:.0f} s",
        )
    console.print(table)


if __name__ == "__main__":
    main()
