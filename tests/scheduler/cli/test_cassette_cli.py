"""The README's cassette commands: `farm run --capture` records a server's exchanges, a suite
serves the file with `replay:` to other models, and the scorecard shows which trials left the
cassette, counting them or (the sweep's or the report's choice) leaving them out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.scheduler.cli.test_replay import ORDERS, SCENARIO, farm

GET_7 = {"call": {"name": "get_order", "arguments": {"order_id": "7"}}}
CANCEL_7 = {"call": {"name": "cancel_order", "arguments": {"order_id": "7"}}}
ANSWER = {"answer": "Order 7 (total 120) is cancelled."}


def sweep(path: Path, suite: Path, models: dict[str, list[Any]], **extra: Any) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "name": path.stem,
                "models": [
                    {"id": name, "adapter": "scripted", "model": "x", "script": script}
                    for name, script in models.items()
                ],
                "prompts": ["native"],
                "scenarios": {"suites": [str(suite)]},
                "repetitions": 1,
                **extra,
            }
        )
    )
    return path


def card(data: Path, *options: str) -> dict[str, Any]:
    shown = farm("report", "--format", "json", *options, data=data)
    assert shown.returncode == 0, shown.stderr
    return dict(json.loads(shown.stdout))


def test_a_captured_server_is_served_from_its_cassette_and_strays_are_counted_apart(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    live = tmp_path / "live.yaml"
    live.write_text(
        f'suite: live\nservers:\n  - name: orders\n    command: ["{{python}}", "{ORDERS}"]\n'
        + SCENARIO
    )
    recording = sweep(tmp_path / "record.yaml", live, {"recorder": [GET_7, CANCEL_7, ANSWER]})
    recorded = farm("run", str(recording), "--capture", str(tmp_path / "tapes"), data=data)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "capturing MCP exchanges into" in recorded.stdout
    tape = yaml.safe_load((tmp_path / "tapes" / "orders.yaml").read_text())
    assert [c["tool"] for c in tape["calls"]] == ["get_order", "cancel_order"]

    # The server is gone; its cassette stands in for it, for two other models.
    (tmp_path / "tapes").rename(tmp_path / "kept")
    replayed = tmp_path / "replayed.yaml"
    replayed.write_text(
        "suite: replayed\nservers:\n  - name: orders\n    replay: kept/orders.yaml\n" + SCENARIO
    )
    stray = {"call": {"name": "get_order", "arguments": {"order_id": "8"}}}
    models = {"faithful": [GET_7, CANCEL_7, ANSWER], "stray": [stray, GET_7, CANCEL_7, ANSWER]}
    run = farm("run", str(sweep(tmp_path / "play.yaml", replayed, models)), data=data)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "trials that left their cassette" in run.stdout
    assert "stray × native: 1" in run.stdout and "counted like any trial" in run.stdout

    counted = card(data)
    assert counted["left_cassette"] == "count"
    extras = {x["model"]: x["left_cassette"] for x in counted["extras"]}
    assert extras == {"faithful": 0, "stray": 1}
    configs = {r["model"]: r["n"] for r in counted["rows"] if r["dimension"] == "config"}
    assert configs == {"faithful": 1, "stray": 1}

    excluded = card(data, "--left-cassette", "exclude")
    configs = {r["model"]: r["n"] for r in excluded["rows"] if r["dimension"] == "config"}
    assert configs == {"faithful": 1}  # the stray trial is in no rate, only in its count
    assert {x["model"]: x["left_cassette"] for x in excluded["extras"]}["stray"] == 1

    # A sweep that says so from the start gets a stored scorecard without them.
    own = sweep(tmp_path / "strict.yaml", replayed, models, left_cassette="exclude")
    assert farm("run", str(own), data=data).returncode == 0
    strict = card(data)
    assert strict["left_cassette"] == "exclude"
    assert [r["model"] for r in strict["rows"] if r["dimension"] == "config"] == ["faithful"]
