"""`farm compare` on state probes: the state pass rate, the wrong_state rate and the other_path
rate of the trials with probes, per side with intervals, and which way each one is better."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import insert
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from bench.synthetic import load
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.scorecard.compare import Compared, Side, compare
from mcp_farm.schema.db import TrialRow, init_db, make_engine

SCENARIOS = [f"state.{i}" for i in range(6)]
STATE = ["state", "wrong_state", "other_path"]


def _trial(
    sweep: str, scenario: str, rep: int, outcome: str, state: bool | None, other: bool | None
) -> dict[str, object]:
    """One stored trial; `state` None: the trial had no probes."""
    return {
        "trial_id": f"{sweep}:{scenario}:{rep}",
        "sweep_id": sweep,
        "model_id": "m",
        "prompt_id": "native",
        "scenario_id": scenario,
        "scenario_version": 1,
        "tier": "simple",
        "expected_tools": json.dumps(["add_note"]),
        "repetition": rep,
        "status": "done",
        "outcome": outcome,
        "latency_s": 1.0,
        "state_passed": state,
        "other_path": other,
        "payload_json": "{}",
    }


def _store(engine: Engine, sweep: str, rows: Iterator[dict[str, object]]) -> None:
    load(engine, sweep, iter(()))
    with engine.begin() as conn:
        conn.execute(insert(TrialRow), list(rows))


def _sweep(sweep: str, kind: str) -> Iterator[dict[str, object]]:
    """Six probed scenarios of eight repetitions, plus one scenario without probes that always
    passes. `kind`: `good` (calls and state pass), `doubled` (calls pass, state fails:
    wrong_state) or `other` (calls fail, state passes: other_path)."""
    for scenario in SCENARIOS:
        for rep in range(8):
            if kind == "good":
                yield _trial(sweep, scenario, rep, "pass", True, False)
            elif kind == "doubled":
                yield _trial(sweep, scenario, rep, "wrong_state", False, False)
            else:
                yield _trial(sweep, scenario, rep, "wrong_params", True, True)
    for rep in range(8):
        yield _trial(sweep, "plain", rep, "pass", None, None)
    # An infrastructure error is not graded, probes or not.
    yield _trial(sweep, SCENARIOS[0], 99, "infra_error", None, None)


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    _store(engine, "good", _sweep("good", "good"))
    _store(engine, "doubled", _sweep("doubled", "doubled"))
    _store(engine, "other", _sweep("other", "other"))
    return engine


def _cells(found: list[Compared]) -> dict[str, Compared]:
    return {c.dimension: c for c in found if c.label == "m/native"}


def test_a_doubled_write_is_a_state_regression_and_a_wrong_state_regression(
    engine: Engine,
) -> None:
    cells = _cells(compare(engine, Side.parse("good"), Side.parse("doubled"), STATE))
    assert set(cells) == set(STATE)
    state, wrong, other = cells["state"], cells["wrong_state"], cells["other_path"]
    # Only the 48 trials with probes count; the scenario without probes is no cluster.
    assert (state.diff.a_n, state.diff.b_n, state.diff.clusters) == (48, 48, 6)
    assert (state.diff.a_rate, state.diff.b_rate, state.verdict) == (1.0, 0.0, "regression")
    # A higher wrong_state rate is worse: B's rise is a regression, not an improvement.
    assert (wrong.diff.a_rate, wrong.diff.b_rate, wrong.verdict) == (0.0, 1.0, "regression")
    assert wrong.diff.low > 0
    assert other.verdict == "same"


def test_fewer_wrong_states_is_an_improvement(engine: Engine) -> None:
    cells = _cells(compare(engine, Side.parse("doubled"), Side.parse("good"), STATE))
    assert cells["wrong_state"].verdict == "improvement"
    assert cells["state"].verdict == "improvement"


def test_more_other_paths_is_a_change_neither_better_nor_worse(engine: Engine) -> None:
    found = compare(engine, Side.parse("good"), Side.parse("other"), STATE)
    cells = _cells(found)
    assert (cells["other_path"].diff.b_rate, cells["other_path"].verdict) == (1.0, "changed")
    assert cells["state"].verdict == "same"
    assert not any(c.verdict == "regression" for c in found)


def test_sweeps_without_probes_have_no_state_cells(engine: Engine) -> None:
    _store(engine, "plain", iter([_trial("plain", "a", 0, "pass", None, None)]))
    assert compare(engine, Side.parse("plain"), Side.parse("good"), STATE) == []


def _farm(engine: Engine, *args: str) -> tuple[int, str]:
    url = str(engine.url.render_as_string(hide_password=False))
    result = CliRunner().invoke(app, [*args, "--db", url], env={"COLUMNS": "220"})
    return result.exit_code, result.output


def _rows(said: str) -> dict[str, list[str]]:
    cells = [[c.strip() for c in line.split("│")[1:]] for line in said.splitlines()]
    return {c[0]: c for c in cells if len(c) > 3 and c[1] == "m/native"}


def test_farm_compare_shows_state_cells_by_default_and_fails_on_a_state_regression(
    engine: Engine,
) -> None:
    code, said = _farm(engine, "compare", "good", "doubled", "--fail-on-regression")
    assert code == 1, said
    kinds = _rows(said)
    assert kinds["state"][2:5] == ["100% n=48", "0% n=48", "-100pt"]
    assert kinds["state"][-2] == "regression"
    assert (kinds["wrong_state"][4], kinds["wrong_state"][-2]) == ("+100pt", "regression")


def test_farm_compare_does_not_fail_on_a_change_in_other_path(engine: Engine) -> None:
    code, said = _farm(engine, "compare", "good", "other", "--by", "other_path")
    assert code == 0, said
    assert _rows(said)["other_path"][-2] == "changed"
    assert "1 changed (other_path: neither better nor worse)" in said
