"""An agent target on the real farm (Redis, a `farm worker`, PostgreSQL) records what the same
sweep records embedded: the same trial ids, outcomes and recorded tool calls, for a one-prompt
scenario, a conversation and a state probe, run by the scripted agent process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import Scenario
from mcp_farm.schema.db import make_engine
from tests.distributed.conftest import ROOT, Farm, wait_until
from tests.distributed.test_farm import counts
from tests.helpers import ideal_script

pytestmark = pytest.mark.integration

BY_MESSAGE = ROOT / "tests" / "workers" / "agent" / "by_message.py"
SCENARIOS = {
    "basic": "fs.budget-total",
    "conversations": "conv.note-then-append",
    "state": "state.notes-groceries-once",
}
"""A one-prompt scenario, a conversation (two turns, a process each) and a state probe."""


def scenario_of(suite: str, scenario_id: str) -> Scenario:
    return next(s for s in load_suite(suite).scenarios if s.id == scenario_id)


def agent_sweep(tmp_path: Path, name: str, **env: str) -> dict[str, Any]:
    """The scripted agent process on SCENARIOS, each trial making its scenario's ideal calls
    (picked by the trial's first message); `env` is added to the agent's environment."""
    scripts = {}
    for suite, scenario_id in SCENARIOS.items():
        scenario = scenario_of(suite, scenario_id)
        first = scenario.turns[0].user if scenario.turns else scenario.prompt
        scripts[first] = ideal_script(scenario)
    path = tmp_path / "agent-scripts.json"
    path.write_text(json.dumps(scripts), encoding="utf-8")
    agent = {
        "command": ["{python}", str(BY_MESSAGE), "--config", "{mcp_config}"],
        "env": {"FARM_AGENT_SCRIPTS": str(path), **env},
        "time_limit_s": 120,
    }
    return {
        "name": name,
        "models": [
            {"id": "scripted-agent", "adapter": "agent", "model": "scripted", "agent": agent}
        ],
        "prompts": ["native"],
        "scenarios": {"suites": list(SCENARIOS), "ids": list(SCENARIOS.values())},
        "repetitions": 1,
    }


def recorded(engine: Engine, sweep_id: str) -> dict[str, tuple[Any, ...]]:
    """Per trial id: its scenario, outcome, detail and attempts, and its tool calls in order."""
    with engine.connect() as conn:
        trials = conn.execute(
            text(
                "select trial_id, scenario_id, outcome, detail, attempts from trial "
                "where sweep_id = :s"
            ),
            {"s": sweep_id},
        ).all()
        calls = conn.execute(
            text(
                "select trial_id, idx, server, tool, arguments_json, ok, result_digest "
                "from tool_call where sweep_id = :s order by trial_id, idx"
            ),
            {"s": sweep_id},
        ).all()
    return {
        trial_id: (*rest, [tuple(c[1:]) for c in calls if c[0] == trial_id])
        for trial_id, *rest in trials
    }


def test_an_agent_sweep_on_the_farm_records_the_trials_and_calls_the_embedded_run_records(
    farm: Farm, tmp_path: Path
) -> None:
    sweep = farm.sweep_file(tmp_path, agent_sweep(tmp_path, "agent-farm"))
    # The same file embedded, into a database of its own: the same sweep and trial ids.
    local_db = f"sqlite:///{tmp_path / 'embedded.db'}"
    farm.cli("run", str(sweep), "--db", local_db)
    sweep_id = farm.submit(sweep)
    farm.worker("cpu", "farm-cpu@test")
    wait_until(lambda: counts(farm, sweep_id) == {"done": 3}, 120, "every agent trial")

    embedded = make_engine(local_db)
    try:
        here = recorded(embedded, sweep_id)
    finally:
        embedded.dispose()
    there = recorded(farm.engine, sweep_id)
    assert there == here
    assert sorted(scenario for scenario, *_ in there.values()) == sorted(SCENARIOS.values())
    assert {(outcome, attempts) for _, outcome, _, attempts, _ in there.values()} == {("pass", 1)}
    assert all(calls for *_, calls in there.values())
