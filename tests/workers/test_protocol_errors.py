"""A server that answers a call with a JSON-RPC error (not an error result) failed that call:
the model sees the error, an `expect_error` step is met by it, and a replay says it now fails.
A server that dies in the middle of a call is the infrastructure's failure, never a farm bug."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import Settings, TrialResult
from mcp_farm.workers.trial import execute_trial
from tests.helpers import free_port, trial, wait_until_serving
from tests.scheduler.cli.test_replay import farm

pytestmark = pytest.mark.integration
GRAPH = Path(__file__).resolve().parent.parent / "servers" / "graph.py"
ASK_ZED = [
    {"call": {"name": "open_nodes", "arguments": {"names": ["Zed"]}}},
    {"answer": "I know nothing about Zed."},
]


def graph_suite(folder: Path, server_yaml: str, expect_error: bool = False) -> str:
    path = folder / "graph.yaml"
    path.write_text(f"""
suite: graph
servers:
  - name: graph
{server_yaml}
scenarios:
  - id: graph.who-is-zed
    version: 1
    tier: simple
    prompt: What do you know about Zed?
    servers: [graph]
    expect:
      - tool: open_nodes
        params: {{names: ["Zed"]}}
        expect_error: {str(expect_error).lower()}
""")
    return str(path)


def stdio(folder: Path, *flags: str, expect_error: bool = False) -> str:
    argv = ", ".join(f'"{a}"' for a in ["{python}", str(GRAPH), *flags])
    return graph_suite(folder, f"    command: [{argv}]", expect_error)


def run(suite: str, script: list[dict], settings: Settings) -> TrialResult:
    scenario = load_suite(suite).scenarios[0]
    return anyio.run(execute_trial, trial(scenario, script, suite=suite), settings)


def assert_failed_call_seen_by_the_model(result: TrialResult) -> None:
    assert result.outcome != "harness_error", result.detail
    [call] = result.tool_calls
    assert not call.ok and call.server == "graph"
    assert "Entity with name Zed not found" in (call.error or "")
    [shown] = [m.content for m in result.transcript if m.role == "tool"]
    assert shown.startswith("Error: ") and "Entity with name Zed not found" in shown


def test_a_json_rpc_error_is_a_failed_call_the_model_sees_over_stdio(
    tmp_path: Path, settings: Settings
) -> None:
    result = run(stdio(tmp_path), ASK_ZED, settings)
    assert_failed_call_seen_by_the_model(result)
    # The step was not done by a call that failed: the model asked but learnt nothing.
    assert result.outcome == "wrong_params", result.detail


def test_a_json_rpc_error_meets_an_expect_error_step(tmp_path: Path, settings: Settings) -> None:
    result = run(stdio(tmp_path, expect_error=True), ASK_ZED, settings)
    assert_failed_call_seen_by_the_model(result)
    assert result.outcome == "pass", result.detail


def test_a_farm_call_refused_with_a_json_rpc_error_stops_a_continued_conversation(
    tmp_path: Path, settings: Settings
) -> None:
    # Under `continue` the farm makes the failed turn's expected call itself; the server
    # refuses it over JSON-RPC. That is recorded on the turn, not raised as a farm bug.
    argv = ", ".join(f'"{a}"' for a in ["{python}", str(GRAPH)])
    path = tmp_path / "graph-talk.yaml"
    path.write_text(f"""
suite: graph-talk
servers:
  - name: graph
    command: [{argv}]
scenarios:
  - id: graph.zed-then-alice
    version: 1
    tier: moderate
    servers: [graph]
    on_turn_failure: continue
    turns:
      - user: What do you know about Zed?
        expect:
          - tool: open_nodes
            params: {{names: ["Zed"]}}
            example: {{names: ["Zed"]}}
      - user: And Alice?
        expect:
          - tool: open_nodes
            params: {{names: ["Alice"]}}
""")
    result = run(str(path), [{"answer": "No idea."}, *ASK_ZED], settings)
    [turn] = result.turn_results
    assert (result.outcome, turn.outcome) == ("no_tool_call", "no_tool_call"), result.detail
    assert [(c.tool, c.ok) for c in turn.farm_calls] == [("open_nodes", False)]
    assert "Entity with name Zed not found" in turn.farm_problem
    assert "not continued after turn 1" in result.detail


@pytest.fixture
def http_graph() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(GRAPH), "--transport", "http", "--port", str(port)],
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until_serving(url, proc, 30, "the HTTP graph server")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_json_rpc_error_over_streamable_http_meets_an_expect_error_step(
    tmp_path: Path, settings: Settings, http_graph: str
) -> None:
    suite = graph_suite(tmp_path, f"    transport: http\n    url: {http_graph}", True)
    result = run(suite, ASK_ZED, settings)
    assert_failed_call_seen_by_the_model(result)
    assert result.outcome == "pass", result.detail


def test_a_server_that_dies_during_a_call_is_an_infra_error_not_a_farm_bug(
    tmp_path: Path, settings: Settings
) -> None:
    script = [{"call": {"name": "forget_server", "arguments": {}}}, {"answer": "done"}]
    result = run(stdio(tmp_path), script, settings)
    assert result.outcome == "infra_error", result.detail
    assert "graph" in result.detail and "forget_server" in result.detail


def test_a_replay_lists_a_call_now_answered_with_a_json_rpc_error_as_now_failing(
    tmp_path: Path,
) -> None:
    import sqlite3

    import yaml

    data, sweep = tmp_path / "data", tmp_path / "sweep.yaml"
    script = [
        {"call": {"name": "open_nodes", "arguments": {"names": ["Alice"]}}},
        {"answer": "Alice works at Acme."},
    ]
    suite = stdio(tmp_path)
    sweep.write_text(
        yaml.safe_dump(
            {
                "name": "graph",
                "models": [{"id": "ideal", "adapter": "scripted", "model": "x", "script": script}],
                "prompts": ["native"],
                "scenarios": {"suites": [suite]},
                "repetitions": 1,
            }
        )
    )
    recorded = farm("run", str(sweep), data=data)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    with sqlite3.connect(data / "farm.sqlite") as db:
        [(sweep_id,)] = db.execute("select distinct sweep_id from trial").fetchall()
    stdio(tmp_path, "--forgetful")  # the server as defined now: an older release
    replayed = farm("replay", sweep_id, data=data)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    out = replayed.stdout
    assert "call 1 open_nodes: now fails: " in out, out
    assert "Entity with name Alice not found" in out
    assert "not made" not in out
