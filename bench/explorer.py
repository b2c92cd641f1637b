"""How long the trial explorer's pages take on the synthetic million-trial sweep in PostgreSQL.

    .venv/bin/python -m bench.explorer [--size 1000000] [--runs 5] [--keep]

The sweep is bench.scorecard's (2 models × 2 prompt configs × 250 scenarios × repetitions, one
to three tool calls a trial); `--keep` reuses (or keeps) that benchmark's database of the same
size. One trial gets a real transcript. Each page is requested `--runs` times through the
explorer's web app in this process (query, rendering and HTTP handling; no network), after one
untimed request, and the best and median are printed with the query plan's access to the trial
table: a plan that reads the whole sweep is named.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.table import Table
from sqlalchemy import text
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from bench.pipeline import database
from bench.scorecard import CONFIGS, SCENARIOS, SWEEP, kept_database, loaded_trials
from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.view.app import create_app
from mcp_farm.scheduler.view.filters import TrialFilter
from mcp_farm.scheduler.view.queries import page_statements

TRANSCRIPT = [
    {"role": "user", "content": "Where is the budget file, and what does it say?"},
    {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [{"id": "c0", "name": "search_files", "arguments": {"pattern": "budget"}}],
    },
    {"role": "tool", "tool_call_id": "c0", "content": "/home/a/budget.txt\n" * 40},
    {"role": "assistant", "content": "It is /home/a/budget.txt."},
]

PAGES = [
    ("sweep list", "/", None),
    ("trials, first page", f"/sweeps/{SWEEP}/trials", {}),
    ("trials, page 200", f"/sweeps/{SWEEP}/trials", {"page": "200"}),
    (
        "a scorecard cell",
        f"/sweeps/{SWEEP}/trials",
        {"model": "model-b", "config": "json", "scenario": "s0123"},
    ),
    (
        "a tool cell (model × config × expected tool)",
        f"/sweeps/{SWEEP}/trials",
        {"model": "model-a", "config": "native", "tool": "tool_03"},
    ),
    ("one outcome", f"/sweeps/{SWEEP}/trials", {"outcome": "wrong_tool"}),
    (
        "cell × outcome",
        f"/sweeps/{SWEEP}/trials",
        {"model": "model-a", "config": "native", "outcome": "wrong_params"},
    ),
    ("one scenario, all configs", f"/sweeps/{SWEEP}/trials", {"scenario": "s0200"}),
    ("slowest first", f"/sweeps/{SWEEP}/trials", {"sort": "slowest"}),
    ("newest first", f"/sweeps/{SWEEP}/trials", {"sort": "newest"}),
    (
        "a rare filter (left the cassette: none did)",
        f"/sweeps/{SWEEP}/trials",
        {"left_cassette": "yes"},
    ),
    (
        "tier × paraphrased",
        f"/sweeps/{SWEEP}/trials",
        {"tier": "complex", "wording": "paraphrased"},
    ),
    ("text search (no match)", f"/sweeps/{SWEEP}/trials", {"search": "no such text"}),
]


@contextmanager
def loaded(size: int, keep: bool) -> Iterator[Engine]:
    reps = max(1, size // (len(CONFIGS) * SCENARIOS))
    opened = kept_database(size) if keep else database()
    with opened as engine:
        if loaded_trials(engine) == 0:
            rows = trials(
                SWEEP, CONFIGS, scenarios(SCENARIOS, seed=1), reps, lambda m, p, s: 0.7, seed=size
            )
            load(engine, SWEEP, rows)
        with engine.begin() as conn:
            # As a submission records it (bench.synthetic leaves it 0).
            conn.execute(
                text(
                    "update sweep set trial_count = (select count(*) from trial "
                    "where sweep_id = :s) where sweep_id = :s"
                ),
                {"s": SWEEP},
            )
            # A database kept from before synthetic trials had a finish time.
            conn.execute(
                text(
                    "update trial set finished_at = timestamp '2026-11-01' + "
                    "latency_s * interval '1 hour' where sweep_id = :s and finished_at is null"
                ),
                {"s": SWEEP},
            )
            conn.execute(text("analyze trial"))
        yield engine


def _plan(engine: Engine, query: dict[str, str] | None) -> str:
    """How the page's two statements (the page, the capped count) read the trial table: which
    index, or a sequential scan, and whether a limit stops it early."""
    if query is None:
        return "–"
    page_sql, count_sql, params = page_statements(SWEEP, TrialFilter.read(query))
    found = []
    with engine.connect() as conn:
        for sql in (page_sql, count_sql):
            plan = [r[0] for r in conn.execute(text(f"explain {sql}"), params)]
            access = [
                w
                for line in plan
                for w in line.replace("(", " ").split()
                if w.startswith("ix_") or w == "trial_pkey"
            ]
            scan = any("Seq Scan on trial" in line for line in plan)
            limited = plan[0].lstrip().startswith("Limit") or "Limit" in " ".join(plan[:3])
            what = "seq scan" if scan else ", ".join(dict.fromkeys(access)) or "?"
            found.append(what + (" (limit)" if limited and scan else ""))
    return " / ".join(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep and reuse the database")
    args = parser.parse_args()
    console = Console()
    with loaded(args.size, args.keep) as engine:
        trial_id = f"{SWEEP}:model-a:native:s0007:0"
        with engine.begin() as conn:
            conn.execute(
                text("update trial set transcript_json = :t where trial_id = :i"),
                {"t": json.dumps(TRANSCRIPT), "i": trial_id},
            )
        count = loaded_trials(engine)
        pages = [*PAGES, ("one trial's transcript", f"/trials/{trial_id}", None)]
        table = Table(
            title=f"Explorer pages over {count:,} trials (PostgreSQL)", title_justify="left"
        )
        for head, justify in (
            ("page", "left"),
            ("best", "right"),
            ("median", "right"),
            ("page / count read the trial table by", "left"),
        ):
            table.add_column(head, justify=justify)  # type: ignore[arg-type]
        client = TestClient(create_app(engine))
        for name, path, query in pages:
            client.get(path, params=query)
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                response = client.get(path, params=query)
                times.append(time.perf_counter() - started)
                response.raise_for_status()
            table.add_row(
                name,
                f"{1000 * min(times):.0f} ms",
                f"{1000 * statistics.median(times):.0f} ms",
                _plan(engine, query),
            )
        console.print(table)


if __name__ == "__main__":
    main()
