"""Claims and leases: a trial runs in one process at a time, and a dead holder's trial is
taken over; the store waits out a short database outage and gives up after its budget."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import StoreError
from mcp_farm.schema.db import (
    SweepRow,
    TrialRow,
    init_db,
    make_engine,
    session_scope,
)
from mcp_farm.workers.node.lease import Leases
from mcp_farm.workers.node.tasks import patiently
from mcp_farm.workers.store.results import claim_trial
from tests.helpers import (
    ideal_script,
    trial,
)

SCENARIO = load_suite("basic").scenarios[0]


@pytest.fixture(
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)],
)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    """Both databases: PostgreSQL claims through the driver, SQLite through SQLAlchemy."""
    if request.param == "postgres":
        engine: Engine = request.getfixturevalue("pg_engine")
    else:
        engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    return engine


def _pending(engine: Engine, sweep_status: str = "active") -> str:
    spec = trial(SCENARIO, ideal_script(SCENARIO))
    with session_scope(engine) as session:
        session.add(
            SweepRow(
                sweep_id=spec.sweep_id,
                name="s",
                spec_json="{}",
                trial_count=1,
                created_at=datetime.now(UTC),
                status=sweep_status,
            )
        )
        session.add(
            TrialRow(
                trial_id=spec.trial_id,
                sweep_id=spec.sweep_id,
                model_id="m",
                prompt_id="native",
                scenario_id=SCENARIO.id,
                scenario_version=1,
                tier="simple",
                expected_tools="[]",
                repetition=0,
                payload_json=spec.model_dump_json(),
            )
        )
    return spec.trial_id


def _claim(engine: Engine, trial_id: str, node: str, stale_s: float = 30.0) -> str:
    before = datetime.now(UTC) - timedelta(seconds=stale_s)
    return claim_trial(engine=engine, trial_id=trial_id, node=node, stale_before=before)


def _row(engine: Engine, trial_id: str) -> tuple[str, str, int]:
    with engine.connect() as conn:
        found = conn.execute(
            text("select status, node, attempts from trial where trial_id = :t"), {"t": trial_id}
        ).one()
    return found[0], found[1], found[2]


def test_a_second_delivery_of_a_trial_under_a_fresh_lease_is_held_not_run(
    engine: Engine,
) -> None:
    trial_id = _pending(engine)
    assert _claim(engine, trial_id, "a") == "claimed"
    assert _claim(engine, trial_id, "b") == "held"
    assert _row(engine, trial_id) == ("running", "a", 1)


def test_a_trial_whose_holder_stopped_renewing_its_lease_is_taken_over(engine: Engine) -> None:
    trial_id = _pending(engine)
    assert _claim(engine, trial_id, "a") == "claimed"
    # Seen from a moment when that lease has lapsed:
    assert _claim(engine, trial_id, "b", stale_s=-1) == "claimed"
    assert _row(engine, trial_id) == ("running", "b", 2)


def test_a_recorded_trial_is_a_duplicate_and_a_cancelled_sweep_skips(engine: Engine) -> None:
    trial_id = _pending(engine)
    with engine.begin() as conn:
        conn.execute(text("update trial set status = 'done', outcome = 'pass'"))
    assert _claim(engine, trial_id, "a") == "recorded"
    with engine.begin() as conn:
        conn.execute(text("update trial set status = 'running', outcome = null"))
        conn.execute(text("update sweep set status = 'cancelled'"))
    # A cancelled sweep's trial is skipped, not held forever, whatever its lease says.
    assert _claim(engine, trial_id, "a") == "cancelled"


def test_an_infra_error_is_claimed_again(engine: Engine) -> None:
    trial_id = _pending(engine)
    with engine.begin() as conn:
        conn.execute(text("update trial set status = 'done', outcome = 'infra_error'"))
    assert _claim(engine, trial_id, "a") == "claimed"


def test_a_held_lease_is_renewed_and_a_released_one_is_not(engine: Engine) -> None:
    trial_id = _pending(engine)
    _claim(engine, trial_id, "a")
    old = datetime(2020, 1, 1, tzinfo=UTC)
    with engine.begin() as conn:
        conn.execute(text("update trial set beat_at = :t"), {"t": old})
    leases = Leases(engine, every_s=3600)  # renewed by hand below, not by its thread
    with leases.hold(trial_id):
        assert leases.renew() == 1
    assert _claim(engine, trial_id, "b") == "held"
    assert leases.renew() == 0


def test_a_database_step_is_retried_until_it_works() -> None:
    failures = iter([StoreError("down"), StoreError("down")])

    def step() -> str:
        problem = next(failures, None)
        if problem:
            raise problem
        return "saved"

    assert patiently(step, budget_s=30, what="test") == "saved"


def test_a_database_step_gives_up_after_its_budget() -> None:
    def step() -> str:
        raise StoreError("still down")

    with pytest.raises(StoreError, match="still down"):
        patiently(step, budget_s=0.6, what="test")
