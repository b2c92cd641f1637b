"""`farm replay` of a conversation lists its changes turn by turn: which turn's call now fails
or answers differently, the farm's own calls of a continued turn, and which turn's verdict
changed; the same server again is no change."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from tests.scheduler.cli.test_replay import ORDERS, farm

pytestmark = pytest.mark.integration

SCRIPT = [
    {"answer": "I'd rather not look."},  # turn 1 fails: the farm gets the order itself
    {"call": {"name": "cancel_order", "arguments": {"order_id": "7"}}},
    {"answer": "Order 7 is cancelled."},
]


def suite(folder: Path, version: int) -> Path:
    path = folder / "orders.yaml"
    scenario = {
        "id": "orders.talk",
        "version": 1,
        "tier": "moderate",
        "servers": ["orders"],
        "on_turn_failure": "continue",
        "turns": [
            {
                "user": "What is order 7's total?",
                "expect": [
                    {"tool": "get_order", "params": {"order_id": "7"}, "example": {"order_id": "7"}}
                ],
                "final_answer": "120",
                "example_answer": "Order 7 comes to 120.",
            },
            {
                "user": "Cancel it, please.",
                "expect": [
                    {
                        "tool": "cancel_order",
                        "params": {"order_id": "7"},
                        "example": {"order_id": "7"},
                    }
                ],
                "final_answer": "cancel",
            },
        ],
    }
    path.write_text(
        yaml.safe_dump(
            {
                "suite": "orders",
                "servers": [
                    {
                        "name": "orders",
                        "command": ["{python}", str(ORDERS), "--version", str(version)],
                    }
                ],
                "scenarios": [scenario],
            }
        )
    )
    return path


def record(tmp_path: Path) -> tuple[Path, str]:
    data = tmp_path / "data"
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        yaml.safe_dump(
            {
                "name": "talk",
                "models": [{"id": "ideal", "adapter": "scripted", "model": "x", "script": SCRIPT}],
                "prompts": ["native"],
                "scenarios": {"suites": [str(suite(tmp_path, 1))]},
                "repetitions": 1,
            }
        )
    )
    recorded = farm("run", str(sweep), data=data)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    with sqlite3.connect(data / "farm.sqlite") as db:
        [(sweep_id, turns_json)] = db.execute("select sweep_id, turns_json from trial").fetchall()
    outcomes = [(t["outcome"], len(t["farm_calls"])) for t in json.loads(turns_json)]
    assert outcomes == [("no_tool_call", 1), ("pass", 0)]
    return data, sweep_id


def test_a_replayed_conversation_names_the_turn_of_each_changed_call_and_verdict(
    tmp_path: Path,
) -> None:
    data, sweep_id = record(tmp_path)
    same = farm("replay", sweep_id, data=data)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no change: all 1 trials answered as recorded" in same.stdout

    suite(tmp_path, 2)  # get_order renames a field, cancel_order fails
    changed = farm("replay", sweep_id, "--rerun", "--json", data=data)
    assert changed.returncode == 0, changed.stdout + changed.stderr
    [trial] = json.loads(changed.stdout)["changes"]
    assert (trial["before"], trial["after"]) == ("no_tool_call", "no_tool_call")
    assert trial["turns"] == [{"turn": 2, "before": "pass", "after": "wrong_params"}]
    kinds = [(c["turn"], c["farm"], c["index"], c["tool"], c["kind"]) for c in trial["calls"]]
    assert kinds == [
        (2, False, 0, "cancel_order", "now fails"),
        (2, False, 0, "cancel_order", "result changed"),
        (1, True, 0, "get_order", "result changed"),
    ]

    shown = farm("replay", sweep_id, data=data).stdout
    assert "turn 2: pass → wrong_params" in shown
    assert "turn 1 farm call 1 get_order: result changed" in shown
    assert "turn 2 call 1 cancel_order: now fails: " in shown
