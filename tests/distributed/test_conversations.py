"""A conversation sweep on the real farm (Redis, a `farm worker`, PostgreSQL) records the same
turns, outcomes and scorecard conversation block as the same sweep run embedded: a turn the farm
continued from and a turn whose tool list changes included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_farm.scenarios import load_suite
from tests.distributed.conftest import Farm
from tests.helpers import ideal_script

pytestmark = pytest.mark.integration

BY_ID = {s.id: s for s in load_suite("conversations").scenarios}
GROCERIES, WORKSPACE = "conv.groceries-two-adds", "conv.workspace-archive-after-upgrade"


def talks(name: str) -> dict[str, Any]:
    """Two scripted models over two conversations: one fails the groceries' first turn (the
    farm continues from the expected state), one is the workspace's ideal agent (its second
    turn follows the upgrade's new tool list); each also meets the other's conversation."""
    groceries = BY_ID[GROCERIES]
    return {
        "name": name,
        "models": [
            {
                "id": "gives-up-first",
                "adapter": "scripted",
                "model": "x",
                "script": [
                    {"answer": "I can't do that."},
                    *ideal_script(groceries.turn_scenario(1)),
                ],
            },
            {
                "id": "workspace-ideal",
                "adapter": "scripted",
                "model": "x",
                "script": ideal_script(BY_ID[WORKSPACE]),
            },
        ],
        "prompts": ["native"],
        "scenarios": {"suites": ["conversations"], "ids": [GROCERIES, WORKSPACE]},
        "repetitions": 1,
        "on_turn_failure": "continue",
    }


def recorded(farm: Farm, sweep_id: str) -> dict[tuple[str, str], tuple[Any, ...]]:
    """Per model and scenario: outcome, detail and turns (call timings aside)."""
    found = {}
    for model, scenario, outcome, detail, turns_json in farm.rows(
        "select model_id, scenario_id, outcome, detail, turns_json from trial where sweep_id = :s",
        s=sweep_id,
    ):
        turns = json.loads(turns_json)
        for turn in turns:
            for call in turn["farm_calls"]:
                call.pop("latency_s")
        found[(model, scenario)] = (outcome, detail, turns)
    return found


def test_a_conversation_sweep_on_the_farm_records_what_the_embedded_run_records(
    farm: Farm, tmp_path: Path
) -> None:
    embedded = farm.sweep_file(tmp_path, talks("talks-embedded"))
    farm.cli("run", str(embedded), "--db", farm.db_url)
    [(here,)] = farm.rows("select sweep_id from sweep")

    there = farm.submit(farm.sweep_file(tmp_path, talks("talks-farm")))
    farm.worker("cpu", "farm-cpu@test", "--control")  # the control queue aggregates
    remote_card = farm.scorecard(there)

    local, remote = recorded(farm, here), recorded(farm, there)
    assert len(remote) == 4
    assert remote == local
    outcome, _detail, turns = remote[("gives-up-first", GROCERIES)]
    assert [t["outcome"] for t in turns] == ["no_tool_call", "pass"]
    assert [c["tool"] for c in turns[0]["farm_calls"]] == ["append_to_note"]
    outcome, _detail, turns = remote[("workspace-ideal", WORKSPACE)]
    assert outcome == "pass"
    assert turns[1]["tools_added"] == ["archive_task", "assign_task", "export_tasks"]
    assert remote_card["conversations"] == farm.scorecard(here)["conversations"]
    assert remote_card["conversations"]
