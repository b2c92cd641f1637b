"""The agent session against the real fixture MCP servers (stdio and streamable HTTP)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import (
    Scenario,
    Settings,
    TrialResult,
)
from mcp_farm.workers.trial import execute_trial
from tests.helpers import (
    free_port,
    ideal_script,
    trial,
    wait_until_serving,
)

pytestmark = pytest.mark.integration
BASIC = load_suite("basic").scenarios
SLOW_SERVER = Path(__file__).resolve().parent.parent / "servers" / "slow.py"


def run(spec_args: dict, settings: Settings, scenario: Scenario) -> TrialResult:
    spec = trial(scenario, **spec_args)
    return anyio.run(execute_trial, spec, settings)


def test_every_basic_scenario_has_an_ideal_example() -> None:
    for scenario in BASIC:
        assert scenario.example_answer, scenario.id
        assert all(step.example is not None for step in scenario.expect), scenario.id


@pytest.mark.parametrize("mode", ["native", "json"])
@pytest.mark.parametrize("scenario", BASIC, ids=[s.id for s in BASIC])
def test_an_ideal_scripted_agent_passes(scenario: Scenario, mode: str, settings: Settings) -> None:
    result = run({"script": ideal_script(scenario), "prompt": mode}, settings, scenario)
    assert result.outcome == "pass", (result.detail, [c.error for c in result.tool_calls])
    assert [c.tool for c in result.tool_calls] == scenario.expected_tools
    assert all(c.ok and c.result_digest for c in result.tool_calls)


def test_each_trial_gets_a_fresh_sandbox(settings: Settings) -> None:
    write = next(s for s in BASIC if s.id == "fs.write-shopping-list")
    first = run({"script": ideal_script(write)}, settings, write)
    listing = next(s for s in BASIC if s.id == "fs.list-desktop")
    second = run({"script": ideal_script(listing)}, settings, listing)
    assert first.outcome == second.outcome == "pass"
    assert "shopping.txt" not in second.tool_calls[0].result_text


CHAIN = next(s for s in BASIC if s.id == "fs.budget-total")


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        (
            [
                {"call": {"name": "get_file_info", "arguments": {"path": "/Documents"}}},
                {"answer": "46,550"},
            ],
            "wrong_tool",
        ),
        (
            [
                {
                    "call": {
                        "name": "read_file",
                        "arguments": {"path": "/Documents/budget-q1-2026.md"},
                    }
                },
                {"answer": "46,550"},
            ],
            "wrong_sequence",
        ),
        (
            [
                {"call": {"name": "search_files", "arguments": {"pattern": "budget"}}},
                {
                    "call": {
                        "name": "read_file",
                        "arguments": {"path": "/Documents/project-plan.md"},
                    }
                },
                {"answer": "46,550"},
            ],
            "wrong_params",
        ),
        ([{"text": '{"tool": "search_files", "arguments": {"pattern": "budget"'}], "format_error"),
        ([{"answer": "It is probably 46,550."}], "no_tool_call"),
        (
            [{"call": {"name": "search_files", "arguments": {"pattern": "budget"}}}],
            "wrong_sequence",
        ),
        ([{"call": {"name": "teleport", "arguments": {}}}], "wrong_tool"),
    ],
)
def test_scripted_mistakes_get_their_own_outcome(
    script: list, expected: str, settings: Settings
) -> None:
    result = run({"script": script, "prompt": "json"}, settings, CHAIN)
    assert result.outcome == expected, result.detail
    # A reply the decoder took for a call it could not read is marked, never the answer.
    last = result.transcript[-1]
    assert last.undecoded == (expected == "format_error")


def _suite(tmp_path: Path, server_yaml: str, time_limit: float = 3) -> str:
    path = tmp_path / "extra.yaml"
    path.write_text(f"""
suite: extra
servers:
{server_yaml}
scenarios:
  - id: slow.report
    version: 1
    tier: simple
    prompt: Fetch finance report 7.
    servers: [slow]
    time_limit_s: {time_limit}
    expect:
      - tool: fetch_report
        params: {{report_id: "7"}}
""")
    return str(path)


def test_a_hung_tool_past_the_time_limit_is_a_timeout(tmp_path: Path, settings: Settings) -> None:
    suite = _suite(
        tmp_path,
        f"""  - name: slow
    command: ["{{python}}", "{SLOW_SERVER}"]""",
    )
    scenario = load_suite(suite).scenarios[0]
    script = [{"call": {"name": "fetch_report", "arguments": {"report_id": "7"}}}]
    result = run({"script": script, "suite": suite}, settings, scenario)
    assert result.outcome == "timeout"
    assert result.stop_reason == "time_limit"
    assert result.latency_s < 60  # bounded: the session was cut off, not left hanging
    assert len(result.transcript) >= 3  # what happened before the hang is kept


def test_a_server_that_dies_on_start_is_an_infra_error(tmp_path: Path, settings: Settings) -> None:
    suite = _suite(
        tmp_path,
        f"""  - name: slow
    command: ["{{python}}", "{SLOW_SERVER}", "--crash"]""",
        time_limit=30,
    )
    scenario = load_suite(suite).scenarios[0]
    result = run({"script": [{"answer": "x"}], "suite": suite}, settings, scenario)
    assert result.outcome == "infra_error"
    assert "slow" in result.detail and "failed to start" in result.detail


@pytest.fixture
def http_search_server() -> str:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcp_farm.scenarios.servers.search",
            "--transport",
            "http",
            "--port",
            str(port),
        ],
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until_serving(url, proc, 30, "the HTTP search server")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_chain_over_streamable_http(
    tmp_path: Path, settings: Settings, http_search_server: str
) -> None:
    path = tmp_path / "http.yaml"
    original = next(s for s in BASIC if s.id == "search.budget-review-date")
    body = original.model_dump(mode="json", exclude_defaults=True) | {"servers": ["search_http"]}
    import yaml

    path.write_text(
        yaml.safe_dump(
            {
                "suite": "http",
                "servers": [
                    {"name": "search_http", "transport": "http", "url": http_search_server}
                ],
                "scenarios": [body],
            }
        )
    )
    scenario = load_suite(str(path)).scenarios[0]
    result = run({"script": ideal_script(scenario), "suite": str(path)}, settings, scenario)
    assert result.outcome == "pass", result.detail
    assert [c.server for c in result.tool_calls] == ["search_http", "search_http"]
