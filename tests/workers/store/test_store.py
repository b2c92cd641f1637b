"""Idempotent result storage on SQLite and on a real PostgreSQL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import TrialSpec
from mcp_farm.schema.db import (
    TrialRow,
    init_db,
    make_engine,
    session_scope,
)
from mcp_farm.workers.store.results import save_trial
from tests.distributed.conftest import wait_until
from tests.helpers import (
    ideal_script,
    listing_result,
    trial,
)

SCENARIO = load_suite("basic").scenarios[0]


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
        engine=engine,
        spec=spec,
        result=listing_result(SCENARIO, spec.trial_id, spec.sweep_id, [0, 1, 2], "wrong_tool"),
    )
    save_trial(
        engine=engine,
        spec=spec,
        result=listing_result(SCENARIO, spec.trial_id, spec.sweep_id, [0, 1, 2], "wrong_tool"),
    )
    assert _counts(engine) == (1, 3, "wrong_tool")
    # A redelivered trial that ran differently replaces the row and its calls, adding nothing.
    save_trial(
        engine=engine, spec=spec, result=listing_result(SCENARIO, spec.trial_id, spec.sweep_id, [0])
    )
    assert _counts(engine) == (1, 1, "pass")


def test_saving_a_trial_twice_keeps_one_row_on_sqlite(tmp_path: Path) -> None:
    _check_idempotent(make_engine(f"sqlite:///{tmp_path / 'x' / 'farm.sqlite'}"))


def test_the_route_a_trial_took_is_stored_on_its_row_and_replaced_on_redelivery(
    tmp_path: Path,
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'route.sqlite'}")
    init_db(engine)
    spec = trial(SCENARIO, ideal_script(SCENARIO))
    result = listing_result(SCENARIO, spec.trial_id, spec.sweep_id, [0])

    def stored() -> tuple[str | None, bool | None]:
        with session_scope(engine) as session:
            row = session.get(TrialRow, spec.trial_id)
            assert row is not None
            return row.route, row.first_try

    save_trial(engine=engine, spec=spec, result=result.model_copy(update={"route": "two-reads"}))
    assert stored()[0] == "two-reads"
    again = result.model_copy(update={"route": "one-call", "first_try": True})
    save_trial(engine=engine, spec=spec, result=again)
    assert stored() == ("one-call", True)
    save_trial(engine=engine, spec=spec, result=result)  # no routes: NULL, not the old name
    assert stored()[0] is None


@pytest.mark.integration
def test_saving_a_trial_twice_keeps_one_row_on_postgres(pg_engine: Engine) -> None:
    assert pg_engine.dialect.name == "postgresql"
    _check_idempotent(pg_engine)


# A barrier inside PostgreSQL: a deferred constraint trigger runs at COMMIT, after every
# statement of the transaction, and waits there for an advisory lock the test holds. It holds
# a save at its commit whichever way the client sends it (statement by statement, or
# pipelined in one round trip), so the test stays independent of the store's transport.
COMMIT_GATE = 4242
HOLD_AT_COMMIT = f"""
CREATE FUNCTION wait_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_xact_lock_shared({COMMIT_GATE}); RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER wait_at_commit AFTER INSERT OR UPDATE ON trial
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION wait_at_commit();
"""


def _running_trials(engine: Engine, specs: list[TrialSpec]) -> None:
    with session_scope(engine) as session:
        for spec in specs:
            session.add(
                TrialRow(
                    trial_id=spec.trial_id,
                    sweep_id=spec.sweep_id,
                    model_id="m",
                    prompt_id="native",
                    scenario_id=SCENARIO.id,
                    scenario_version=SCENARIO.version,
                    tier=SCENARIO.tier,
                    expected_tools="[]",
                    repetition=spec.repetition,
                    status="running",
                    payload_json=spec.model_dump_json(),
                )
            )


def _waiting_at_commit(gate: Connection) -> int:
    return int(
        gate.execute(
            text(
                "select count(*) from pg_locks where locktype = 'advisory' "
                "and objid = :gate and not granted"
            ),
            {"gate": COMMIT_GATE},
        ).scalar_one()
    )


@pytest.mark.integration
def test_two_trials_landing_together_still_report_the_sweep_finished(pg_engine: Engine) -> None:
    """The last-trial check must see the other trial's commit, or no aggregate ever starts.

    Both transactions are held at their commit until the other has written, which is the
    interleaving two workers finishing at once produce.
    """
    init_db(pg_engine)
    specs = [trial(SCENARIO, ideal_script(SCENARIO), sweep_id="race", repetition=r) for r in (0, 1)]
    _running_trials(pg_engine, specs)
    with pg_engine.begin() as conn:
        conn.execute(text(HOLD_AT_COMMIT))
    with pg_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as gate:
        gate.execute(text("select pg_advisory_lock(:gate)"), {"gate": COMMIT_GATE})
        with ThreadPoolExecutor(2) as pool:
            saving = [
                pool.submit(
                    save_trial,
                    engine=pg_engine,
                    spec=s,
                    result=listing_result(SCENARIO, s.trial_id, "race", [0]),
                )
                for s in specs
            ]
            # Both saves have written everything and wait at their COMMIT.
            wait_until(lambda: _waiting_at_commit(gate) == 2, 20, "both saves at their commit")
            gate.execute(text("select pg_advisory_unlock(:gate)"), {"gate": COMMIT_GATE})
            left = [f.result(timeout=20) for f in saving]
    assert False in left, "neither trial saw the sweep finished, so nothing would aggregate it"
