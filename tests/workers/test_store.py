"""Idempotent result storage on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Engine

from scenarios import load_suite
from schema import (
    Provenance,
    ToolCallRecord,
    TrialResult,
    TrialRow,
    init_db,
    make_engine,
    session_scope,
)
from tests.helpers import ideal_script, trial
from workers.store import save_trial

SCENARIO = load_suite("basic").scenarios[0]


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


@pytest.mark.integration
def test_saving_a_trial_twice_keeps_one_row_on_postgres(pg_engine: Engine) -> None:
    assert pg_engine.dialect.name == "postgresql"
    _check_idempotent(pg_engine)

