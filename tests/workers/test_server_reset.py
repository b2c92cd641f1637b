"""Servers the farm cannot restart or copy back: a declared `reset:` lets `setup:` seed them,
and the self-checks' leak probe catches a server whose state still reaches the next trial."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_farm.scenarios import (
    ScenarioError,
    load_suite,
)
from mcp_farm.schema import Settings
from mcp_farm.workers.mcp.pool import REPO_ROOT
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import (
    free_port,
    trial,
    wait_until_serving,
)
from tests.scenarios.leaks import leak_problem

pytestmark = pytest.mark.integration
MEMO_SERVER = Path(__file__).resolve().parent.parent / "servers" / "memo.py"
SESSION_MEMO_SERVER = MEMO_SERVER.with_name("session_memo.py")
MEMORY_SERVER = REPO_ROOT / ".tools/node/node_modules/.bin/mcp-server-memory"
SEEDED = """
  - id: memo.seeded
    version: 1
    tier: simple
    prompt: What memos do I have?
    servers: [memo]
    setup:
      - {tool: add_memo, arguments: {text: call the plumber}}
    expect:
      - tool: list_notes
        example: {}
    example_answer: You have one memo, about the plumber.
"""
LISTING = [{"call": {"name": "list_notes", "arguments": {}}}, {"answer": "done"}]


def _served(script: Path) -> Iterator[str]:
    """A test server over streamable HTTP, started by hand: the farm only connects to it."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(script), "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_until_serving(url, proc, 30, script.stem)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def memo_url() -> Iterator[str]:
    """The memo server: one list of memos for every session."""
    yield from _served(MEMO_SERVER)


@pytest.fixture(scope="module")
def session_memo_url() -> Iterator[str]:
    """The session-memo server: each MCP session's memos kept apart."""
    yield from _served(SESSION_MEMO_SERVER)


@pytest.fixture
def runtime(settings: Settings) -> Iterator[Runtime]:
    rt = Runtime(settings)
    try:
        yield rt
    finally:
        rt.close()


def _suite(folder: Path, server: str, scenarios: str = SEEDED) -> str:
    path = folder / "reset.yaml"
    path.write_text(f"suite: reset\nservers:\n{server}\nscenarios:{scenarios}")
    return str(path)


def _http(url: str, reset: str = "") -> str:
    return f"  - name: memo\n    transport: http\n    url: {url}\n" + (
        f"    reset: {reset}\n" if reset else ""
    )


def test_setup_on_an_http_server_needs_a_declared_reset(tmp_path: Path, memo_url: str) -> None:
    with pytest.raises(ScenarioError, match="reset: session") as raised:
        load_suite(_suite(tmp_path, _http(memo_url)))
    assert raised.value.field == "scenarios[0].setup[0].server"
    assert "HTTP server the farm does not start" in str(raised.value)


def test_a_reset_call_runs_before_every_trial_and_clears_the_seed(
    tmp_path: Path, memo_url: str, runtime: Runtime, settings: Settings
) -> None:
    suite = _suite(tmp_path, _http(memo_url, "{tool: forget_all}"))
    scenario = load_suite(suite).scenarios[0]
    for repetition in (0, 1):
        result = runtime.run(trial(scenario, LISTING, suite=suite, repetition=repetition), settings)
        assert result.outcome == "pass", result.detail
        # The reset is recorded first, with the setup calls; the seed is there once, not twice.
        assert [c.tool for c in result.setup_calls] == ["forget_all", "add_memo"]
        assert result.tool_calls[0].result_text == "1. call the plumber"
    assert leak_problem(suite, scenario, runtime, settings, tmp_path) is None


def test_a_failing_reset_call_is_an_infra_error_naming_it(
    tmp_path: Path, memo_url: str, runtime: Runtime, settings: Settings
) -> None:
    suite = _suite(tmp_path, _http(memo_url, "{tool: forget_everything}"))
    result = runtime.run(trial(load_suite(suite).scenarios[0], LISTING, suite=suite), settings)
    assert result.outcome == "infra_error"
    assert "setup tool 'forget_everything' is not listed" in result.detail


def test_the_leak_probe_catches_a_server_that_only_claims_to_reset(
    tmp_path: Path, memo_url: str, runtime: Runtime, settings: Settings
) -> None:
    # `reset: session` is a promise the memo server does not keep: one list for every session.
    suite = _suite(tmp_path, _http(memo_url, "session"))
    scenario = load_suite(suite).scenarios[0]
    problem = leak_problem(suite, scenario, runtime, settings, tmp_path)
    assert problem is not None
    assert "a trial after a seeded one got a different answer from list_notes" in problem
    assert "call the plumber" in problem


def test_a_server_that_keeps_sessions_apart_gets_a_new_session_for_every_trial(
    tmp_path: Path, session_memo_url: str, runtime: Runtime, settings: Settings
) -> None:
    # The session-memo server keeps each MCP session's memos apart, so `reset: session` is an
    # honest claim, kept only if the pool opens a new session per trial instead of lending
    # the seeded trial's session to the next.
    suite = _suite(tmp_path, _http(session_memo_url, "session"))
    scenario = load_suite(suite).scenarios[0]
    assert leak_problem(suite, scenario, runtime, settings, tmp_path) is None
    again = runtime.run(trial(scenario, LISTING, suite=suite, repetition=7), settings)
    assert again.outcome == "pass", again.detail
    assert [c.tool for c in again.setup_calls] == ["add_memo"]
    assert again.tool_calls[0].result_text == "1. call the plumber"


def test_a_stdio_server_with_reset_session_is_a_new_process_for_every_trial(
    tmp_path: Path, runtime: Runtime, settings: Settings
) -> None:
    # Over stdio the process is the session: a new session is a new process.
    server = (
        f'  - name: memo\n    command: ["{sys.executable}", "{SESSION_MEMO_SERVER}"]\n'
        "    reset: session\n"
    )
    suite = _suite(tmp_path, server)
    scenario = load_suite(suite).scenarios[0]
    started = runtime.pool.started
    assert leak_problem(suite, scenario, runtime, settings, tmp_path) is None
    assert runtime.pool.started - started == 3


def _memory(env: str, sandbox: str = "", reuse: str = "") -> str:
    return (
        f'  - name: memory\n    command: ["{MEMORY_SERVER}"]\n    env: {{{env}}}\n'
        + (f"    sandbox: {sandbox}\n" if sandbox else "")
        + (f"    reuse: {reuse}\n" if reuse else "")
    )


MEMORY_SEEDED = """
  - id: memory.seeded
    version: 1
    tier: simple
    prompt: Who is in my memory?
    servers: [memory]
    setup:
      - tool: create_entities
        arguments: {entities: [{name: Ada Lovelace, entityType: person, observations: [codes]}]}
    expect:
      - tool: read_graph
        example: {}
    example_answer: Ada Lovelace.
"""


def test_the_leak_probe_catches_state_kept_on_disk_outside_the_sandbox(
    tmp_path: Path, runtime: Runtime, settings: Settings
) -> None:
    # The reference memory server with its graph file outside any sandbox: `reuse: false`
    # restarts it for every trial, which satisfies the load check, yet the file stays.
    if not MEMORY_SERVER.exists():
        pytest.fail("the memory server is not installed: run `bash scripts/setup.sh --dev`")
    kept = tmp_path / "kept" / "memory.jsonl"
    kept.parent.mkdir()
    leaky = _suite(tmp_path, _memory(f"MEMORY_FILE_PATH: {kept}", reuse="false"), MEMORY_SEEDED)
    scenario = load_suite(leaky).scenarios[0]
    problem = leak_problem(leaky, scenario, runtime, settings, tmp_path)
    assert problem is not None and "Ada Lovelace" in problem
    # The same server with its file in the trial's sandbox keeps nothing.
    sandboxed = _suite(
        tmp_path,
        _memory('MEMORY_FILE_PATH: "{sandbox}/memory.jsonl"', sandbox="memory"),
        MEMORY_SEEDED,
    )
    assert leak_problem(sandboxed, scenario, runtime, settings, tmp_path) is None
