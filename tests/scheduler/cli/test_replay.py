"""`farm replay`: a recorded sweep's calls sent again, with no model, to a server that changed
(a renamed field, a tool that now fails) lists exactly the changed calls and outcomes; sent to
the same server again, it reports no change."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ORDERS = Path(__file__).resolve().parents[2] / "servers" / "orders.py"
SCRIPT = [
    {"call": {"name": "get_order", "arguments": {"order_id": "7"}}},
    {"call": {"name": "cancel_order", "arguments": {"order_id": "7"}}},
    {"answer": "Order 7 (total 120) is cancelled."},
]


def farm(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_farm.scheduler.cli.app", *args, "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


def suite(folder: Path, version: int) -> Path:
    path = folder / "orders.yaml"
    path.write_text(f"""
suite: orders
servers:
  - name: orders
    command: ["{{python}}", "{ORDERS}", "--version", "{version}"]
scenarios:
  - id: orders.cancel
    version: 1
    tier: simple
    prompt: Check order 7's total, then cancel it.
    servers: [orders]
    expect:
      - tool: get_order
        params: {{order_id: "7"}}
      - tool: cancel_order
        params: {{order_id: "7"}}
    final_answer: cancel
""")
    return path


def test_a_changed_server_shows_as_changed_calls_and_outcomes_and_the_same_one_as_none(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    path = suite(tmp_path, 1)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        yaml.safe_dump(
            {
                "name": "orders",
                "models": [{"id": "ideal", "adapter": "scripted", "model": "x", "script": SCRIPT}],
                "prompts": ["native"],
                "scenarios": {"suites": [str(path)]},
                "repetitions": 1,
            }
        )
    )
    recorded = farm("run", str(sweep), data=data)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    with sqlite3.connect(data / "farm.sqlite") as db:
        [(sweep_id, outcome)] = db.execute("select sweep_id, outcome from trial").fetchall()
    assert outcome == "pass"

    same = farm("replay", sweep_id, data=data)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no change: all 1 trials answered as recorded" in same.stdout

    suite(tmp_path, 2)  # the server as it is defined now: version 2
    changed = farm("replay", sweep_id, "--rerun", data=data)
    assert changed.returncode == 0, changed.stdout + changed.stderr
    out = changed.stdout
    assert "1 of 1 trials changed (1 outcome(s))" in out
    assert "ideal · native · orders.cancel #0: pass → wrong_params" in out
    assert "call 1 get_order: result changed" in out
    assert '-  "total": 120' in out and '+  "amount": 120' in out
    assert "call 2 cancel_order: now fails: " in out and "cancelling needs a reason now" in out
    assert out.count("call ") == 3  # two changes of call 1 and 2, and nothing else
    assert "this measures the servers" in out
    with sqlite3.connect(data / "farm.sqlite") as db:
        sweeps = {r[0] for r in db.execute("select sweep_id from sweep").fetchall()}
    assert len(sweeps) == 2  # the recording and its replay, linked by the replay's spec


def test_replaying_a_sweep_without_recordings_is_a_clear_error_before_anything_runs(
    tmp_path: Path,
) -> None:
    from mcp_farm.scheduler.submission.expand import expand
    from mcp_farm.scheduler.submission.replay import replay_spec, with_recordings
    from mcp_farm.schema import FarmError, SweepSpec

    source = SweepSpec.model_validate(
        {
            "name": "s",
            "models": [{"id": "ideal", "adapter": "scripted", "model": "x", "script": SCRIPT}],
            "prompts": ["native"],
            "scenarios": {"ids": ["fs.list-desktop"]},
            "repetitions": 2,
        }
    )
    plan = expand(replay_spec(source, "s-1"), "test")
    assert {t.model.adapter for t in plan.trials} == {"replay"}
    with pytest.raises(FarmError, match="sweep s-1 has no recorded trial for 2 of the 2 trials"):
        with_recordings(plan, [], "s-1")
    unknown = farm("replay", "no-such-sweep", data=tmp_path / "data")
    assert unknown.returncode == 2 and "no sweep 'no-such-sweep'" in unknown.stderr


def test_a_trial_the_replay_did_not_record_is_listed_not_skipped() -> None:
    from types import SimpleNamespace

    from mcp_farm.scheduler.submission.replay import changes

    row = SimpleNamespace(
        trial_id="t1",
        model_id="ideal",
        prompt_id="native",
        scenario_id="orders.cancel",
        toolset="",
        repetition=0,
        variant=0,
        outcome="pass",
        transcript_json="[]",
    )
    [found] = changes([row], [], {}, {})
    assert (found.before, found.after, found.calls) == ("pass", "not replayed", [])
