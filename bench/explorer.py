"""How long the trial explorer's pages take on the synthetic million-trial sweep, in PostgreSQL
and in SQLite.

    .venv/bin/python -m bench.explorer [--size 1000000] [--runs 5] [--keep]
        [--database postgresql|sqlite|both]

The sweep is bench.scorecard's (2 models × 2 prompt configs × 250 scenarios × repetitions, one
to three tool calls a trial); `--keep` reuses (or keeps) that benchmark's PostgreSQL database of
the same size, and a SQLite file of it in the temporary folder (migrated, never analysed, as
`farm run` leaves one). One trial gets a real transcript. Each page is requested `--runs` times through the
explorer's web app in this process (query, rendering and HTTP handling; no network), after one
untimed request, and the best and median are printed with the way the page was read (`order`,
`walk`, `few` or `sorted`: scheduler/view/queries/page.py, Route) and each of that way's statements'
access to the trial table: a plan that reads the whole sweep is named.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.table import Table
from sqlalchemy import text
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from bench.pipeline import database
from bench.scorecard import CONFIGS, SCENARIOS, SWEEP, kept_database, loaded_trials
from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.view.app import create_app
from mcp_farm.scheduler.view.filters import FilterError, TrialFilter
from mcp_farm.scheduler.view.queries import (
    page_statements,
    prefer_indexes,
    sweep_lines,
    trial_page,
)
from mcp_farm.schema.db import init_db, make_engine, text_search_ready

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
    (
        "text search (a rare match)",
        f"/sweeps/{SWEEP}/trials",
        {"search": "s0123 (repetition 7)"},
    ),
    ("text search (a common match)", f"/sweeps/{SWEEP}/trials", {"search": "wrong tool"}),
    ("text search, two characters", f"/sweeps/{SWEEP}/trials", {"search": "zq"}),
    ("text search, punctuation only (%_%)", f"/sweeps/{SWEEP}/trials", {"search": "%_%"}),
    ("text search, punctuation only (::)", f"/sweeps/{SWEEP}/trials", {"search": "::"}),
    (
        "slowest first, a search",
        f"/sweeps/{SWEEP}/trials",
        {"sort": "slowest", "search": "wrong tool"},
    ),
    (
        "slowest first, a rare search",
        f"/sweeps/{SWEEP}/trials",
        {"sort": "slowest", "search": "s0123 (repetition 7)"},
    ),
    ("slowest first, graded: no", f"/sweeps/{SWEEP}/trials", {"sort": "slowest", "graded": "no"}),
    ("fastest first", f"/sweeps/{SWEEP}/trials", {"sort": "fastest"}),
    ("a configuration without a model", f"/sweeps/{SWEEP}/trials", {"config": "json"}),
    (
        "a tool set without a model (none ran)",
        f"/sweeps/{SWEEP}/trials",
        {"config": "native+symbols"},
    ),
    ("first try: no", f"/sweeps/{SWEEP}/trials", {"first_try": "no"}),
    ("a route (none took one)", f"/sweeps/{SWEEP}/trials", {"route": "by-id"}),
    ("graded: no (still to run, infra errors)", f"/sweeps/{SWEEP}/trials", {"graded": "no"}),
    ("graded: yes", f"/sweeps/{SWEEP}/trials", {"graded": "yes"}),
    ("a scoring pass (none)", f"/sweeps/{SWEEP}/trials", {"scoring": "no-such-pass"}),
    ("a page number past the numbered pages", f"/sweeps/{SWEEP}/trials", {"page": "20000"}),
]
"""(name, path, query) of each page timed. `deep` pages are added once the sweep is loaded:
the last page, reached as its link reaches it (after the trial before it)."""


SQLITE_KEPT = "farm_bench_explorer_{size}.sqlite"
"""The kept SQLite database of one size, in the temporary folder (`--keep`)."""


@contextmanager
def _sqlite(size: int, keep: bool) -> Iterator[Engine]:
    """The SQLite file of one size: kept in the temporary folder with `--keep`, else a fresh
    one removed afterwards. As `farm run` leaves one: migrated, never analysed."""
    folder = Path(tempfile.gettempdir()) if keep else Path(tempfile.mkdtemp(prefix="farm-bench-"))
    path = folder / SQLITE_KEPT.format(size=size)
    engine = make_engine(f"sqlite:///{path}")
    init_db(engine)
    try:
        yield engine
    finally:
        engine.dispose()
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def loaded(size: int, keep: bool, dialect: str = "postgresql") -> Iterator[Engine]:
    reps = max(1, size // (len(CONFIGS) * SCENARIOS))
    if dialect == "sqlite":
        opened = _sqlite(size, keep)
    else:
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
            if dialect == "postgresql":
                # A database kept from before synthetic trials had a finish time.
                conn.execute(
                    text(
                        "update trial set finished_at = timestamp '2026-11-01' + latency_s * "
                        "interval '1 hour' where sweep_id = :s and finished_at is null"
                    ),
                    {"s": SWEEP},
                )
            # Words to search (bench.synthetic leaves every detail empty), as a grade writes
            # them: the outcome, then what went wrong where.
            conn.execute(
                text(
                    "update trial set detail = outcome || ': step 0 of ' || scenario_id || "
                    "' (repetition ' || repetition || ') called the wrong tool' "
                    "where sweep_id = :s and outcome <> 'pass' and detail = ''"
                ),
                {"s": SWEEP},
            )
        if dialect == "postgresql":
            # As autovacuum leaves the table (the test services run PostgreSQL without it):
            # else the row versions the updates here and `running` leave pile up, run after
            # run, and an index-only read visits the table for each entry.
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("vacuum (analyze) trial"))
            # The trigram index, as `farm db init` makes it (a kept database from before it).
            note = text_search_ready(engine)
            if note is not None:
                Console().print(note)
        yield engine


def _plan(engine: Engine, query: dict[str, str] | None) -> str:
    """How the page was read (queries.Route) and how each statement of that way reads the
    trial table: which index, or a whole scan, and whether a limit stops it early."""
    if query is None:
        return "–"
    try:
        selection = TrialFilter.read(query)
    except FilterError:
        return "refused before any read"
    route = trial_page(engine=engine, sweep_id=SWEEP, selection=selection).route
    found = []
    with engine.begin() as conn:
        planned = page_statements(conn, SWEEP, selection)
        prefer_indexes(conn, selection)
        params = planned.params
        walk = planned.tail_sql
        if route == "walk":
            end = conn.execute(text(planned.window_sql), params).first()
            if end is not None:
                walk = planned.walk_sql
                params = params | {f"w{i}": v for i, v in enumerate(end)}
            if engine.dialect.name == "postgresql":
                conn.execute(text("set local enable_sort = off"))
        statements = {
            "order": [planned.page_sql, planned.count_sql],
            "walk": [walk, planned.count_sql],
            "few": [planned.probe_sql],
            "sorted": [planned.probe_sql, planned.sorted_sql],
        }[route]
        sqlite = engine.dialect.name == "sqlite"
        for sql in statements:
            explain = "explain query plan" if sqlite else "explain"
            plan = [str(r[-1]) for r in conn.execute(text(f"{explain} {sql}"), params)]
            access = [
                w
                for line in plan
                for w in line.replace("(", " ").split()
                if w.startswith(("ix_", "sqlite_autoindex_trial")) or w == "trial_pkey"
            ]
            if sqlite:
                scan = any(line.startswith("SCAN trial") and "INDEX" not in line for line in plan)
            else:
                scan = any("Seq Scan on trial" in line for line in plan)
            limited = plan[0].lstrip().startswith("Limit") or "Limit" in " ".join(plan[:3])
            what = "whole-table scan" if scan else ", ".join(dict.fromkeys(access)) or "?"
            found.append(what + (" (limit)" if limited and scan else ""))
    return f"{route}: " + " / ".join(found)


@contextmanager
def running(engine: Engine, share: int) -> Iterator[None]:
    """The sweep as if still running: one scenario in `share` of each configuration's trials
    back to `running` (restored after), so its page shows live progress."""
    chosen = "sweep_id = :s and status = 'done' and cast(substr(scenario_id, 2) as int) % :k = 0"
    with engine.begin() as conn:
        conn.execute(
            text(f"update trial set status = 'running' where {chosen}"), {"s": SWEEP, "k": share}
        )
    try:
        yield
    finally:
        with engine.begin() as conn:
            conn.execute(
                text("update trial set status = 'done' where sweep_id = :s and status = 'running'"),
                {"s": SWEEP},
            )


def _last_page(engine: Engine) -> tuple[str, dict[str, str]]:
    """The sweep's last page of trials as its link opens it: after the trial before it."""
    count = loaded_trials(engine)
    pages = -(-count // 50)
    with engine.connect() as conn:
        before = conn.execute(
            text(
                "select trial_id from trial where sweep_id = :s order by model_id, prompt_id, "
                "toolset, scenario_id, repetition, variant, trial_id limit 1 offset :n"
            ),
            {"s": SWEEP, "n": (pages - 1) * 50 - 1},
        ).scalar_one()
    return f"/sweeps/{SWEEP}/trials", {"page": str(pages), "after": before}


def measure(engine: Engine, runs: int, console: Console) -> None:
    """Every page of PAGES, the last page, a transcript and the sweep's page finished and
    running, over `engine`: one table."""
    trial_id = f"{SWEEP}:model-a:native:s0007:0"
    with engine.begin() as conn:
        conn.execute(
            text("update trial set transcript_json = :t where trial_id = :i"),
            {"t": json.dumps(TRANSCRIPT), "i": trial_id},
        )
    count = loaded_trials(engine)
    last_path, last_query = _last_page(engine)
    pages = [
        ("the sweep's page (finished)", f"/sweeps/{SWEEP}", None),
        *PAGES,
        (f"the last page ({last_query['page']}), from its link", last_path, last_query),
        ("one trial's transcript", f"/trials/{trial_id}", None),
    ]
    name = {"postgresql": "PostgreSQL", "sqlite": "SQLite"}[engine.dialect.name]
    table = Table(title=f"Explorer pages over {count:,} trials ({name})", title_justify="left")
    for head, justify in (
        ("page", "left"),
        ("best", "right"),
        ("median", "right"),
        ("first", "right"),
        ("read as: its statements read the trial table by", "left"),
    ):
        table.add_column(head, justify=justify)  # type: ignore[arg-type]
    client = TestClient(create_app(engine), base_url="http://127.0.0.1")

    def timed(
        name: str, path: str, query: dict[str, str] | None, plan: str, web: TestClient
    ) -> None:
        started = time.perf_counter()
        web.get(path, params=query)  # untimed, but said: a sweep's first card is built
        first = time.perf_counter() - started
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            response = web.get(path, params=query)
            times.append(time.perf_counter() - started)
            if response.status_code not in (200, 400):
                response.raise_for_status()
        table.add_row(
            name,
            f"{1000 * min(times):.0f} ms",
            f"{1000 * statistics.median(times):.0f} ms",
            f"{1000 * first:.0f} ms",
            plan,
        )

    for name, path, query in pages:
        timed(name, path, query, _plan(engine, query), client)
    with running(engine, 10):
        (line,) = sweep_lines(engine=engine, sweep_id=SWEEP)
        what = f"the sweep's page, running ({line.done:,}/{line.total:,} done)"
        # A fresh explorer: its first request starts the card's build (and waits for it a
        # few seconds at most); the timed ones come while it runs or after.
        fresh = TestClient(create_app(engine), base_url="http://127.0.0.1")
        plan = "(sweep, status) counts; the card built off the request"
        timed(what, f"/sweeps/{SWEEP}", None, plan, fresh)
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep and reuse the databases")
    parser.add_argument("--database", choices=("postgresql", "sqlite", "both"), default="both")
    args = parser.parse_args()
    console = Console()
    chosen = ("postgresql", "sqlite") if args.database == "both" else (args.database,)
    for dialect in chosen:
        with loaded(args.size, args.keep, dialect) as engine:
            measure(engine, args.runs, console)


if __name__ == "__main__":
    main()
