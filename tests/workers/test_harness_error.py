"""A bug in the farm's own code is a `harness_error`: recorded with its traceback, never retried,
red in every report, and `farm run` exits 1. An infrastructure error stays what it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import text
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

import mcp_farm.workers.trial
from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.submission.expand import Plan, expand
from mcp_farm.scheduler.submission.queries import record_plan, runnable_ids
from mcp_farm.schema import Settings, SweepSpec
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.schema.tasks.messages import TrialDone, TrialSkipped
from mcp_farm.workers.node.runtime import close_runtime
from mcp_farm.workers.node.tasks import run_trial
from tests.helpers import ideal_script, scripted

SCENARIO = next(s for s in load_suite("basic").scenarios if s.id == "fs.budget-total")
BROKEN = {
    "trial.on_connection": "the agent session",
    "stages.drivers.grade_conversation": "the grader",
    "stages.record.provenance": "the result's provenance, after grading",
}


def _planned(settings: Settings) -> tuple[Plan, Engine]:
    """One trial of an ideal scripted agent, recorded and ready to run."""
    sweep = SweepSpec(
        name="broken",
        models=[scripted(ideal_script(SCENARIO))],
        prompts=["native"],
        scenarios={"ids": [SCENARIO.id]},  # type: ignore[arg-type]
        repetitions=1,
    )
    plan = expand(sweep, "sweep")
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    record_plan(engine=engine, plan=plan)
    return plan, engine


def _break(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise ZeroDivisionError("a deliberate bug")

    monkeypatch.setattr(f"mcp_farm.workers.{name}", broken)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_bug_in_the_farm_is_recorded_once_with_its_traceback_and_never_retried(
    name: str, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, engine = _planned(settings)
    _break(monkeypatch, name)
    try:
        # As a worker's first delivery runs it: infrastructure errors would come back as a retry.
        summary = run_trial(plan.trials[0], settings, record_infra=False)
        again = run_trial(plan.trials[0], settings)
    finally:
        close_runtime()

    assert isinstance(summary, TrialDone) and summary.outcome == "harness_error"
    with engine.connect() as conn:
        row = conn.execute(text("select status, outcome, stop_reason, detail from trial")).one()
    assert (row.status, row.outcome, row.stop_reason) == ("done", "harness_error", "harness_error")
    assert "bug in the farm: ZeroDivisionError: a deliberate bug" in row.detail
    assert "Traceback (most recent call last)" in row.detail and "broken" in row.detail
    # Never run again: not by a second delivery, not by resuming or re-running the sweep.
    assert isinstance(again, TrialSkipped) and again.reason == "already recorded"
    assert runnable_ids(engine=engine, sweep_id=plan.sweep_id) == set()


def test_farm_run_shows_a_harness_error_in_red_everywhere_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sweep = {
        "name": "harness",
        "models": [
            {"id": "ideal", "adapter": "scripted", "model": "s", "script": ideal_script(SCENARIO)}
        ],
        "prompts": ["native"],
        "scenarios": {"ids": [SCENARIO.id]},
        "repetitions": 1,
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    data = ["--data-dir", str(tmp_path / "data")]
    _break(monkeypatch, "stages.drivers.grade_conversation")
    try:
        done = CliRunner().invoke(app, ["run", str(path), *data])
    finally:
        close_runtime()
    assert done.exit_code == 1, done.output
    assert "1 trial(s) hit a bug in the farm itself" in done.output

    def report(fmt: str) -> str:
        shown = CliRunner().invoke(app, ["report", "--format", fmt, *data])
        assert shown.exit_code == 0, shown.output
        return shown.output

    assert "🔴 **Harness error.** 1 trial(s) hit a bug in the farm" in report("md")
    assert '<p class="harness">1 trial(s) hit a bug in the farm' in report("html")
    assert 'testsuite name="farm harness" tests="1" errors="1"' in report("junit")
    config = next(r for r in json.loads(report("json"))["rows"] if r["dimension"] == "config")
    # In no rate: the only trial is a harness error, so nothing was measured.
    assert config["outcomes"] == {"harness_error": 1} and config["n"] == 0


def test_an_infrastructure_error_is_still_an_infrastructure_error(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_farm.workers.errors import InfraError

    def down(*_args: Any, **_kwargs: Any) -> Any:
        raise InfraError("the endpoint is down")

    plan, _engine = _planned(settings)
    monkeypatch.setattr(mcp_farm.workers.trial, "on_connection", down)
    try:
        summary = run_trial(plan.trials[0], settings, record_infra=False)
    finally:
        close_runtime()
    assert summary.status == "retry" and "the endpoint is down" in summary.problem
