"""Idempotent result storage on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from scenarios import load_suite
from schema import Provenance, ToolCallRecord, TrialResult, init_db, make_engine
from tests.helpers import ideal_script, trial
from workers.store import save_trial

SCENARIO = load_suite("basic").scenarios[0]
PG_ADMIN = os.environ.get(
    "FARM_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


def _result(spec_id: str, sweep_id: str, calls: int, outcome: str = "pass") -> TrialResult:
    now = datetime.now(UTC)
    return TrialResult(
        trial_id=spec_id,
        sweep_id=sweep_id,
        model_id="m",
        prompt_id="native",
        scenario_id=SCENARIO.id,
        tier=SCENARIO.tier,
        expected_tools=SCENARIO.expected_tools,
        repetition=0,
        outcome=outcome,
        stop_reason="answer",  # type: ignore[arg-type]
        started_at=now,
        finished_at=now,
        latency_s=1.0,
        tool_calls=[
            ToolCallRecord(
                index=i,
                server="filesystem",
                tool="list_directory",
                arguments={"path": "/"},
                ok=True,
            )
            for i in range(calls)
        ],
        provenance=Provenance(
            farm_version="0",
            git_commit="x",
            host="h",
            worker_tag="cpu",
            python="3.11",
            mcp_version="2",
            scenario_version=1,
            prompt_version=1,
            model_pins={},
        ),
    )


def _counts(engine: Engine) -> tuple[int, int, str]:
    with engine.connect() as conn:
        trials = conn.execute(text("select count(*) from trial")).scalar_one()
        calls = conn.execute(text("select count(*) from tool_call")).scalar_one()
        outcome = conn.execute(text("select outcome from trial")).scalar_one()
    return trials, calls, outcome


def _check_idempotent(engine: Engine) -> None:
    init_db(engine)
    spec = trial(SCENARIO, ideal_script(SCENARIO))
    save_trial(
        engine=engine, spec=spec, result=_result(spec.trial_id, spec.sweep_id, 3, "wrong_tool")
    )
    save_trial(
        engine=engine, spec=spec, result=_result(spec.trial_id, spec.sweep_id, 3, "wrong_tool")
    )
    assert _counts(engine) == (1, 3, "wrong_tool")
    # A redelivered trial that ran differently replaces the row and its calls, adding nothing.
    save_trial(engine=engine, spec=spec, result=_result(spec.trial_id, spec.sweep_id, 1))
    assert _counts(engine) == (1, 1, "pass")


def test_saving_a_trial_twice_keeps_one_row_on_sqlite(tmp_path: Path) -> None:
    _check_idempotent(make_engine(f"sqlite:///{tmp_path / 'x' / 'farm.sqlite'}"))


@pytest.fixture
def pg_engine() -> Iterator[Engine]:
    admin = make_engine(PG_ADMIN).execution_options(isolation_level="AUTOCOMMIT")
    name = f"farm_test_{uuid.uuid4().hex[:10]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'create database "{name}"'))
    except OperationalError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL is required in CI and unreachable at {PG_ADMIN}: {exc.orig}")
        pytest.skip(f"no PostgreSQL at {PG_ADMIN}")
    engine = make_engine(PG_ADMIN.rsplit("/", 1)[0] + f"/{name}")
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'drop database "{name}"'))
        admin.dispose()


@pytest.mark.integration
def test_saving_a_trial_twice_keeps_one_row_on_postgres(pg_engine: Engine) -> None:
    assert pg_engine.dialect.name == "postgresql"
    _check_idempotent(pg_engine)
