"""Warm MCP servers: reused across trials, reset between them, replaced when they misbehave."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import Settings
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import (
    ideal_script,
    trial,
)
from tests.workers.test_session_servers import (
    SLOW_SERVER,
    _suite,
)

pytestmark = pytest.mark.integration
BASIC = {s.id: s for s in load_suite("basic").scenarios}


@pytest.fixture
def runtime(settings: Settings) -> Iterator[Runtime]:
    rt = Runtime(settings)
    try:
        yield rt
    finally:
        rt.close()


def test_a_warm_server_serves_many_trials_and_each_sees_a_fresh_sandbox(
    runtime: Runtime, settings: Settings
) -> None:
    write, listing = BASIC["fs.write-shopping-list"], BASIC["fs.list-desktop"]
    first = runtime.run(trial(write, ideal_script(write)), settings)
    second = runtime.run(trial(listing, ideal_script(listing)), settings)
    third = runtime.run(trial(listing, ideal_script(listing), repetition=1), settings)
    assert first.outcome == second.outcome == third.outcome == "pass"
    assert runtime.pool.started == 1  # one filesystem server for all three
    assert "shopping.txt" not in second.tool_calls[0].result_text


def test_a_server_that_hung_is_replaced_not_lent_again(
    runtime: Runtime, settings: Settings, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, f'  - name: slow\n    command: ["{{python}}", "{SLOW_SERVER}"]', 8)
    scenario = load_suite(suite).scenarios[0]
    hang = [{"call": {"name": "fetch_report", "arguments": {"report_id": "7"}}}]
    assert runtime.run(trial(scenario, hang, suite=suite), settings).outcome == "timeout"
    answer = [{"answer": "I cannot fetch it."}]
    after = runtime.run(trial(scenario, answer, suite=suite, repetition=1), settings)
    assert after.outcome == "no_tool_call"
    assert runtime.pool.started == 2
