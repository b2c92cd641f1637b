"""`farm replay`: a recorded sweep's calls sent again, with no model, to a server that changed
(a renamed field, a tool that now fails) lists exactly the changed calls and outcomes; sent to
the same server again, it reports no change."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.forkrun import farm_cli

ORDERS = Path(__file__).resolve().parents[2] / "servers" / "orders.py"
SCRIPT = [
    {"call": {"name": "get_order", "arguments": {"order_id": "7"}}},
    {"call": {"name": "cancel_order", "arguments": {"order_id": "7"}}},
    {"answer": "Order 7 (total 120) is cancelled."},
]


def farm(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    return farm_cli(
        [*args, "--data-dir", str(data)],
        timeout=600,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


SCENARIO = """
scenarios:
  - id: orders.cancel
    version: 1
    tier: simple
    prompt: Check order 7's total, then cancel it.
    servers: [orders]
    expect:
      - tool: get_order
        params: {order_id: "7"}
      - tool: cancel_order
        params: {order_id: "7"}
    final_answer: cancel
"""
"""The orders scenario, under any definition of its `orders` server."""


def suite(folder: Path, version: int) -> Path:
    path = folder / "orders.yaml"
    path.write_text(f"""
suite: orders
servers:
  - name: orders
    command: ["{{python}}", "{ORDERS}", "--version", "{version}"]
{SCENARIO}""")
    return path


def test_a_changed_server_shows_as_changed_calls_and_outcomes_and_the_same_one_as_none(
    tmp_path: Path,
) -> None:
    data, sweep_id = record(tmp_path, 1)
    with sqlite3.connect(data / "farm.sqlite") as db:
        assert db.execute("select outcome from trial").fetchall() == [("pass",)]

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

    from mcp_farm.scheduler.submission.replay_changes import changes

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


def record(tmp_path: Path, version: int, repetitions: int = 1) -> tuple[Path, str]:
    """Run the orders sweep against the server at `version`; (data folder, sweep id)."""
    data = tmp_path / "data"
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        yaml.safe_dump(
            {
                "name": "orders",
                "models": [{"id": "ideal", "adapter": "scripted", "model": "x", "script": SCRIPT}],
                "prompts": ["native"],
                "scenarios": {"suites": [str(suite(tmp_path, version))]},
                "repetitions": repetitions,
            }
        )
    )
    recorded = farm("run", str(sweep), data=data)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    with sqlite3.connect(data / "farm.sqlite") as db:
        [(sweep_id,)] = db.execute("select distinct sweep_id from trial").fetchall()
    return data, sweep_id


def sweep_ids(data: Path) -> set[str]:
    with sqlite3.connect(data / "farm.sqlite") as db:
        return {r[0] for r in db.execute("select sweep_id from sweep").fetchall()}


def test_a_call_that_failed_in_the_recording_and_works_now_shows_as_now_succeeding(
    tmp_path: Path,
) -> None:
    data, sweep_id = record(tmp_path, 2)  # recorded against version 2: cancelling fails
    suite(tmp_path, 1)  # the server now: cancelling works again
    fixed = farm("replay", sweep_id, data=data)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    out = fixed.stdout
    assert "ideal · native · orders.cancel #0: wrong_params → pass" in out
    assert "call 2 cancel_order: now succeeds" in out
    assert "call 2 cancel_order: result changed" in out  # the error text became the result
    assert "call 1 get_order: result changed" in out


def test_compare_lines_a_recording_up_with_its_replay_cell_by_cell_and_both_name_the_link(
    tmp_path: Path,
) -> None:
    data, sweep_id = record(tmp_path, 1)
    suite(tmp_path, 2)
    replayed = farm("replay", sweep_id, data=data)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    [replay_id] = sweep_ids(data) - {sweep_id}

    compared = farm("compare", sweep_id, replay_id, "--all", "--by", "config,scenario", data=data)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    rows = [line for line in compared.stdout.splitlines() if "n=1" in line]
    # One config cell and one scenario cell, each with the recording (A) and the replay (B).
    assert len(rows) == 2, compared.stdout
    assert "ideal/native" in rows[0] and "ideal/native orders.cancel" in rows[1]
    assert all(re.search(r"100% n=1\W+0% n=1\W", row) for row in rows), compared.stdout
    assert "2 cells compared" in compared.stdout

    report = farm("report", replay_id, data=data)
    assert f"replay of {sweep_id}: measures the servers, not the model" in report.stdout
    status = farm_cli(
        ["sweep", "status", replay_id],
        timeout=600,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "FARM_DATA_DIR": str(data)},
    )
    assert f"replay of {sweep_id}: measures the servers" in status.stdout, status.stderr
    assert "replay of" not in farm("report", sweep_id, data=data).stdout


def test_a_replay_target_in_a_sweep_file_is_resolved_before_anything_is_recorded(
    tmp_path: Path,
) -> None:
    data, sweep_id = record(tmp_path, 1)
    path = suite(tmp_path, 2)

    def replay_file(name: str, source: str, repetitions: int) -> Path:
        sweep = tmp_path / f"{name}.yaml"
        spec = {
            "name": name,
            "models": [{"id": "ideal", "adapter": "replay", "model": source}],
            "prompts": ["native"],
            "scenarios": {"suites": [str(path)]},
            "repetitions": repetitions,
        }
        sweep.write_text(yaml.safe_dump(spec))
        return sweep

    before = sweep_ids(data)
    unknown = farm("run", str(replay_file("unknown", "no-such-sweep", 1)), data=data)
    assert unknown.returncode == 2, unknown.stdout + unknown.stderr
    assert "replays sweep 'no-such-sweep', which is not in this database" in unknown.stderr
    short = replay_file("short", sweep_id, 2)  # repetition 1 was never recorded
    for args in (["run", str(short)], ["sweep", "submit", str(short)]):
        refused = farm_cli(
            args,
            timeout=600,
            env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "FARM_DATA_DIR": str(data)},
        )
        assert refused.returncode == 2, refused.stdout + refused.stderr
        error = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
        assert len(error) == 1 and "has no recorded trial for 1 of the 2 trials" in error[0]
        assert "Traceback" not in refused.stderr
    assert sweep_ids(data) == before  # nothing recorded

    ran = farm("run", str(replay_file("mine", sweep_id, 1)), data=data)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    with sqlite3.connect(data / "farm.sqlite") as db:
        [(outcome, detail)] = db.execute(
            "select outcome, detail from trial where sweep_id like 'mine-%'"
        ).fetchall()
    # The recorded calls went to version 2, which refuses the cancel: no adapter error.
    assert outcome == "wrong_params", detail


def test_a_replay_goes_to_the_cpu_queue_whatever_hardware_the_recorded_model_used() -> None:
    from mcp_farm.scheduler.submission.expand import expand
    from mcp_farm.scheduler.submission.replay import replay_note, replay_spec
    from mcp_farm.scheduler.submission.submit import route
    from mcp_farm.schema import Settings, SweepSpec

    source = SweepSpec.model_validate(
        {
            "name": "s",
            "models": [
                {
                    "id": "big",
                    "adapter": "scripted",
                    "model": "x",
                    "script": SCRIPT,
                    "hardware": "dgpu",
                }
            ],
            "prompts": ["native"],
            "scenarios": {"ids": ["fs.list-desktop"]},
            "repetitions": 1,
        }
    )
    plan = expand(replay_spec(source, "s-1"), "test")
    assert set(route(plan, Settings()).values()) == {"farm.hw.cpu"}
    assert replay_note(plan.sweep.model_dump_json()) == (
        "replay of s-1: measures the servers, not the model"
    )
    assert replay_note(source.model_dump_json()) is None
