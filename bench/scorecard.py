"""How long a scorecard takes to build from 10k, 100k and 1M stored trials in PostgreSQL.

    .venv/bin/python -m bench.scorecard [--sizes 10000,100000,1000000] [--runs 3] [--keep]

Each size gets a throwaway database loaded with a synthetic sweep (2 models × 2 prompt
configs × 250 scenarios × as many repetitions as it takes; one to three tool calls per trial),
then the scorecard is built `--runs` times and the best and median are printed. Loading is not
timed. The farm builds the same scorecard in the aggregate task and in `farm report --rebuild`.

`--keep` keeps each size's database (`farm_bench_scorecard_<size>`) instead of dropping it, and
a later `--keep` run reuses it: the synthetic sweep is the same every time (fixed seeds), and
loading a million trials takes minutes. Drop them with `--drop-kept`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import Progress
from rich.table import Table
from sqlalchemy import text
from sqlalchemy.engine import Engine

from bench.pipeline import admin_engine, database, migrated
from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.scorecard.build import build_scorecard

CONFIGS = [("model-a", "native"), ("model-a", "json"), ("model-b", "native"), ("model-b", "json")]
SCENARIOS = 250
RUNS = 3
SWEEP = "bench"
KEPT = "farm_bench_scorecard_{size}"


@contextmanager
def kept_database(size: int) -> Iterator[Engine]:
    """The kept database of one size, created when missing and migrated to this code's schema
    (a kept database from before a migration gets it, as any farm database would)."""
    name = KEPT.format(size=size)
    admin = admin_engine()
    with admin.connect() as conn:
        found = conn.execute(text("select 1 from pg_database where datname = :n"), {"n": name})
        if found.first() is None:
            conn.execute(text(f'create database "{name}"'))
    admin.dispose()
    engine = migrated(name)
    try:
        yield engine
    finally:
        engine.dispose()


def drop_kept() -> None:
    admin = admin_engine()
    with admin.connect() as conn:
        names = conn.execute(
            text("select datname from pg_database where datname like 'farm_bench_scorecard_%'")
        ).scalars()
        for name in list(names):
            conn.execute(text(f'drop database "{name}" with (force)'))
    admin.dispose()


def loaded_trials(engine: Engine) -> int:
    """Trials of the benchmark sweep already in the database. With none, a sweep row left by
    an interrupted load (its trials are copied in one transaction) is removed."""
    with engine.begin() as conn:
        found = conn.execute(
            text("select count(*) from trial where sweep_id = :s"), {"s": SWEEP}
        ).scalar_one()
        if found == 0:
            conn.execute(text("delete from sweep where sweep_id = :s"), {"s": SWEEP})
    return int(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--runs", type=int, default=RUNS, help="builds per size")
    parser.add_argument("--keep", action="store_true", help="keep and reuse loaded databases")
    parser.add_argument("--drop-kept", action="store_true", help="drop kept databases and exit")
    args = parser.parse_args()
    if args.drop_kept:
        drop_kept()
        return
    console = Console()
    table = Table(title="Scorecard build time (PostgreSQL)", title_justify="left")
    for head in ("trials", "tool calls", "rows in card", "best", "median", "load (untimed)"):
        table.add_column(head, justify="right")
    picked = scenarios(SCENARIOS, seed=1)
    for size in (int(s) for s in args.sizes.split(",")):
        reps = max(1, size // (len(CONFIGS) * SCENARIOS))
        opened = kept_database(size) if args.keep else database()
        with opened as engine, Progress(console=console, transient=True) as progress:
            task = progress.add_task(f"loading {size:,} trials", total=None)
            started = time.perf_counter()
            count = loaded_trials(engine)
            loaded = "kept"
            if count == 0:
                rows = trials(SWEEP, CONFIGS, picked, reps, lambda m, p, s: 0.7, seed=size)
                count = load(engine, SWEEP, rows)
                loaded = f"{time.perf_counter() - started:.0f} s"
            progress.update(task, description=f"building the scorecard of {count:,} trials")
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                card = build_scorecard(engine=engine, sweep_id=SWEEP)
                times.append(time.perf_counter() - started)
            calls = sum(c.calls for c in card.tool_calls)
        table.add_row(
            f"{count:,}",
            f"{calls:,}",
            str(len(card.rows)),
            f"{min(times):.2f} s",
            f"{statistics.median(times):.2f} s",
            loaded,
        )
    console.print(table)


if __name__ == "__main__":
    main()
