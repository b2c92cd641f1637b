"""What a trial costs PostgreSQL, counted on the wire, and how the one-round-trip paths
behave when the database misbehaves: a save that fails part way, a connection the server
dropped."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryFile
from typing import Any

import psycopg
import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.pool import Pool

import mcp_farm.workers.node.tasks
from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.scheduler.submission.queries import record_plan
from mcp_farm.schema import (
    ScenarioSelection,
    Settings,
    StoreError,
    SweepSpec,
    TrialSpec,
)
from mcp_farm.schema.db import (
    init_db,
    make_engine,
)
from mcp_farm.workers.node.runtime import close_runtime
from mcp_farm.workers.node.tasks import (
    engine_for,
    patiently,
    run_trial,
)
from mcp_farm.workers.store.results import save_trial
from tests.helpers import (
    ideal_script,
    listing_result,
    scripted,
)

pytestmark = pytest.mark.integration

SCENARIO = next(s for s in load_suite("basic").scenarios if s.id == "fs.list-desktop")


@contextmanager
def round_trips() -> Iterator[Callable[[], int]]:
    """Count round trips to PostgreSQL: libpq's trace of every connection checked out while
    the block runs, one ReadyForQuery from the server ending each round trip."""
    traced: list[psycopg.Connection[Any]] = []
    with TemporaryFile() as log:

        def trace(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
            if dbapi_conn not in traced:
                dbapi_conn.pgconn.trace(log.fileno())
                dbapi_conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
                traced.append(dbapi_conn)

        event.listen(Pool, "checkout", trace)
        counted: list[int] = []
        try:
            yield lambda: counted[0]
        finally:
            event.remove(Pool, "checkout", trace)
            for conn in traced:
                conn.pgconn.untrace()  # flushes what libpq buffered
            log.seek(0)
            counted.append(log.read().decode(errors="replace").count("\tReadyForQuery\t"))


@pytest.fixture
def pg_settings(pg_engine: Engine, tmp_path: Path) -> Iterator[Settings]:
    init_db(pg_engine)
    yield Settings(
        data_dir=tmp_path / "data",
        database_url=pg_engine.url.render_as_string(hide_password=False),
        server_start_timeout_s=20.0,
        heartbeat_s=3600.0,  # no lease renewal in the middle of a count
    )
    close_runtime()
    engine_for.cache_clear()  # its engines point at a database about to be dropped


def _planned(engine: Engine, trials: int) -> list[dict[str, Any]]:
    sweep = SweepSpec(
        name="trips",
        models=[scripted(ideal_script(SCENARIO))],
        prompts=["native"],
        scenarios=ScenarioSelection(ids=[SCENARIO.id]),
        repetitions=trials,
    )
    plan = expand(sweep, "trips")
    record_plan(engine=engine, plan=plan)
    return [t.model_dump(mode="json") for t in plan.trials]


def test_a_trial_costs_postgresql_two_round_trips_its_claim_and_its_save(
    pg_engine: Engine, pg_settings: Settings
) -> None:
    first, last = _planned(pg_engine, 2)
    run_trial(first, pg_settings)  # servers started, the pool connected
    with round_trips() as counted:
        summary = run_trial(last, pg_settings)
    assert summary.outcome == "pass"
    assert summary.last, "the save's probe must see its own commit"
    # The claim (one UPDATE); the save's BEGIN … COMMIT and the "any left?" probe, pipelined.
    assert counted() == 2


def test_a_connection_the_server_dropped_is_replaced_at_once(
    pg_engine: Engine,
    pg_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, second = _planned(pg_engine, 2)
    run_trial(first, pg_settings)
    # What a database restart does to a worker's pooled connections.
    with pg_engine.connect() as admin:
        admin.execute(
            text(
                "select pg_terminate_backend(pid) from pg_stat_activity "
                "where datname = current_database() and pid <> pg_backend_pid()"
            )
        )
    waits: list[float] = []
    monkeypatch.setattr(mcp_farm.workers.node.tasks.time, "sleep", waits.append)

    with caplog.at_level("INFO", logger="mcp_farm.workers.node.tasks"):
        summary = run_trial(second, pg_settings)

    assert summary.outcome == "pass" and summary.last
    assert "a pooled connection was dropped" in caplog.text
    assert waits == [], "a dropped connection costs a fresh one, not a wait"


def test_a_save_failing_part_way_writes_nothing_and_the_connection_serves_the_next(
    pg_engine: Engine,
) -> None:
    init_db(pg_engine)
    (payload,) = _planned(pg_engine, 1)
    trial_id, sweep_id = payload["trial_id"], payload["sweep_id"]
    spec = TrialSpec.model_validate(payload)
    one = make_engine(pg_engine.url.render_as_string(hide_password=False), 1, pre_ping=False)
    try:
        # Two calls with one index: the INSERT fails after the trial row was upserted.
        with pytest.raises(StoreError, match="duplicate key"):
            save_trial(
                engine=one, spec=spec, result=listing_result(SCENARIO, trial_id, sweep_id, [0, 0])
            )
        with pg_engine.connect() as conn:
            status = conn.execute(text("select status from trial")).scalar_one()
            calls = conn.execute(text("select count(*) from tool_call")).scalar_one()
        assert (status, calls) == ("pending", 0)
        # The same (only) pooled connection saves the next result.
        left = patiently(
            lambda: save_trial(
                engine=one, spec=spec, result=listing_result(SCENARIO, trial_id, sweep_id, [0, 1])
            ),
            budget_s=0,
            what="save",
        )
        assert left is False
    finally:
        one.dispose()
