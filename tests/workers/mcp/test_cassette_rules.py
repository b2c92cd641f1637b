"""Cassettes with a server's ignore rules (a call that differs only in an ignored value is the
recorded call; answers that differ only there are one answer) and cassettes that record new
episodes (a call the cassette does not hold goes to the live server and is added)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_farm.scenarios import load_suite
from mcp_farm.scenarios.cassette import load_cassette
from mcp_farm.schema import Settings, TrialResult
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import trial
from tests.scheduler.cli.test_replay import ORDERS, SCENARIO, SCRIPT

pytestmark = pytest.mark.integration

RECORDED_SINCE = "2026-01-01T00:00:00Z"
TAPE = {
    "cassette": 1,
    "server": "orders",
    "tools": [
        {
            "name": "get_order",
            "input_schema": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "since": {"type": "string"}},
            },
        },
        {"name": "cancel_order", "input_schema": {"type": "object"}},
    ],
    "calls": [
        {
            "tool": "get_order",
            "arguments": {"order_id": "7", "since": RECORDED_SINCE},
            "answers": [{"content": [{"type": "text", "text": '{"total": 999}'}]}],
        }
    ],
}
GET_NOW = {"name": "get_order", "arguments": {"order_id": "7", "since": "2026-11-25T09:30:00Z"}}


def settings(folder: Path, **extra: Any) -> Settings:
    return Settings(
        data_dir=folder / "data",
        database_url=f"sqlite:///{folder / 'farm.sqlite'}",
        server_start_timeout_s=30.0,
        **extra,
    )


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[tuple[Runtime, Settings]]:
    config = settings(tmp_path)
    rt = Runtime(config)
    try:
        yield rt, config
    finally:
        rt.close()


def run(rt: Runtime, config: Settings, suite: Path, script: list[Any], rep: int = 0) -> TrialResult:
    scenario = load_suite(str(suite)).scenarios[0]
    result: TrialResult = rt.run(trial(scenario, script, suite=str(suite), repetition=rep), config)
    return result


def orders_suite(folder: Path, name: str, server: dict[str, Any], **top: Any) -> Path:
    path = folder / f"{name}.yaml"
    head = yaml.safe_dump({"suite": name, **top, "servers": [{"name": "orders", **server}]})
    path.write_text(head + SCENARIO)
    return path


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_call_that_differs_only_in_an_ignored_argument_gets_the_recorded_answer(
    tmp_path: Path, runtime: tuple[Runtime, Settings], transport: str
) -> None:
    rt, config = runtime
    (tmp_path / "tape.yaml").write_text(yaml.safe_dump(TAPE))
    served = {"replay": "tape.yaml", "transport": transport}
    ruled = orders_suite(tmp_path, "ruled", {**served, "ignore": {"paths": ["$.since"]}})
    plain = orders_suite(tmp_path, "plain", served)
    script = [{"call": GET_NOW}, {"answer": "nothing to cancel"}]

    matched = run(rt, config, ruled, script)
    assert matched.tool_calls[0].ok and '"total": 999' in matched.tool_calls[0].result_text
    assert not matched.left_cassette
    strayed = run(rt, config, plain, script, rep=1)
    assert not strayed.tool_calls[0].ok and strayed.left_cassette


def test_answers_that_differ_only_in_ignored_values_are_captured_once(tmp_path: Path) -> None:
    rules = {"paths": ["$.checked_at"], "patterns": ["req-[0-9a-f]{8}"]}
    command = ["{python}", str(ORDERS), "--stamp"]
    suite = orders_suite(tmp_path, "stamped", {"command": command}, ignore=rules)
    config = settings(tmp_path, capture_dir=tmp_path / "cassettes")
    rt = Runtime(config)
    try:
        results = [run(rt, config, suite, SCRIPT, rep=rep) for rep in (0, 1)]
    finally:
        rt.close()
    texts = [r.tool_calls[0].result_text for r in results]
    assert texts[0] != texts[1]  # a new timestamp and request id every time
    cassette = load_cassette(tmp_path / "cassettes" / "orders.yaml")
    [get_order] = [c for c in cassette.calls if c.tool == "get_order"]
    assert len(get_order.answers) == 1


def test_new_episodes_go_to_the_live_server_and_are_added_to_the_cassette(
    tmp_path: Path, runtime: tuple[Runtime, Settings]
) -> None:
    rt, config = runtime
    tape = tmp_path / "tape.yaml"
    tape.write_text(yaml.safe_dump(TAPE))
    live = {"command": ["{python}", str(ORDERS)], "record": "new_episodes"}
    recording = orders_suite(tmp_path, "rec", {"replay": "tape.yaml", **live})
    get = {"name": "get_order", "arguments": {"order_id": "7", "since": RECORDED_SINCE}}
    cancel = {"name": "cancel_order", "arguments": {"order_id": "7"}}
    script = [{"call": get}, {"call": cancel}, {"answer": "Cancelled."}]

    first = run(rt, config, recording, script)
    assert first.outcome == "pass", first.detail
    assert '"total": 999' in first.tool_calls[0].result_text  # the recorded answer
    assert first.tool_calls[1].result_text == "order 7 cancelled"  # the live server's
    assert not first.left_cassette
    added = {c.tool: c for c in load_cassette(tape).calls}
    assert added["cancel_order"].arguments == {"order_id": "7"}
    assert added["cancel_order"].answers[0].content[0]["text"] == "order 7 cancelled"
    assert len(added["get_order"].answers) == 1

    served_only = orders_suite(tmp_path, "served", {"replay": "tape.yaml"})
    again = run(rt, config, served_only, script, rep=1)
    assert again.outcome == "pass", again.detail
    assert not again.left_cassette and again.tool_calls[1].result_text == "order 7 cancelled"


def test_recording_new_episodes_begins_a_missing_cassette_from_the_live_tool_list(
    tmp_path: Path, runtime: tuple[Runtime, Settings]
) -> None:
    rt, config = runtime
    live = {"command": ["{python}", str(ORDERS)], "record": "new_episodes"}
    suite = orders_suite(tmp_path, "begun", {"replay": "tapes/new.yaml", **live})
    result = run(rt, config, suite, SCRIPT)
    assert result.outcome == "pass", result.detail
    cassette = load_cassette(tmp_path / "tapes" / "new.yaml")
    assert {t.name for t in cassette.tools} == {"get_order", "cancel_order"}
    assert [c.tool for c in cassette.calls] == ["get_order", "cancel_order"]
    assert json.loads(cassette.calls[0].answers[0].content[0]["text"])["total"] == 120


def test_recording_new_episodes_needs_the_live_server_and_stdio() -> None:
    from mcp_farm.schema import ServerDef

    with pytest.raises(ValueError, match="needs the live server"):
        ServerDef(name="x", replay="x.yaml", record="new_episodes")
    with pytest.raises(ValueError, match=r"served over stdio.*leave out `transport`"):
        ServerDef(name="x", replay="x.yaml", record="new_episodes", command=["s"], transport="http")
    with pytest.raises(ValueError, match="`record` is for a `replay:` server"):
        ServerDef(name="x", command=["s"], record="new_episodes")
