"""Blame by state against real MCP servers over stdio: a conversation whose failed turn wrote
to a server the farm can set back (notes) and to one it cannot (an in-memory store) is set
back nowhere, so the model's right write stays and the farm makes only the missing step; and
a read-call probe that fails as text on a server that says so by its `error_pattern` is the
scenario's `infra_error`, not the model's `wrong_state`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import Settings, TrialResult
from mcp_farm.workers.trial import execute_trial
from tests.helpers import trial

pytestmark = pytest.mark.integration
SERVER = Path(__file__).resolve().parent.parent / "servers" / "textual.py"
SUITE = """suite: blame
servers:
  - name: textual
    command: ["{python}", "SERVER"]
    reuse: false
    error_pattern: "^(Error|Database error):"
scenarios:
  - id: blame.two-servers
    version: 1
    tier: complex
    on_turn_failure: continue
    grade_by: both
    servers: [notes, textual]
    turns:
      - user: Add oat milk to my groceries note, and store milk under the key shopping.
        expect:
          - tool: append_to_note
            params: {note_id: groceries, text: "- oat milk"}
            example: {note_id: groceries, text: "- oat milk"}
          - tool: store
            params: {key: shopping, value: milk}
            example: {key: shopping, value: milk}
        example_answer: Done.
      - user: What is stored under shopping?
        expect:
          - tool: lookup
            params: {key: shopping}
            example: {key: shopping}
        example_answer: milk
    state:
      - server: notes
        file: groceries.md
        expect: {regex: "(?s)(?!.*oat milk.*oat milk).*oat milk.*"}
        label: oat milk once
      - server: textual
        tool: lookup
        arguments: {key: shopping}
        expect: shopping = milk
        label: milk stored
  - id: blame.probe-typo
    version: 1
    tier: simple
    prompt: Store 1 under delta.
    servers: [textual]
    expect:
      - tool: store
        params: {key: delta, value: "1"}
        example: {key: delta, value: "1"}
    state:
      - tool: lookup
        arguments: {key: detla}
        expect: delta = 1
        label: delta stored
"""


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"call": {"name": name, "arguments": arguments}}


def _run(tmp_path: Path, n: int, script: list[dict[str, Any]], settings: Settings) -> TrialResult:
    path = tmp_path / "blame.yaml"
    path.write_text(SUITE.replace("SERVER", str(SERVER)))
    scenario = load_suite(str(path)).scenarios[n]
    return anyio.run(execute_trial, trial(scenario, script, suite=str(path)), settings)


def test_a_failed_turn_on_a_server_without_a_way_back_sets_back_no_server(
    tmp_path: Path, settings: Settings
) -> None:
    script = [
        _call("append_to_note", note_id="groceries", text="- oat milk"),  # right
        _call("store", key="shopping", value="cheese"),  # wrong, on a server with no way back
        {"answer": "Done."},
        _call("lookup", key="shopping"),
        {"answer": "milk"},
    ]
    result = _run(tmp_path, 0, script, settings)
    first, second = result.turn_results
    assert first.outcome == "wrong_params", first.detail
    assert not first.restored
    assert first.set_back == {"notes": "left", "textual": "cannot"}
    # The model's right append stays and counts; the farm makes only the missing step.
    assert list(first.model_steps) == [0]
    assert [(c.tool, c.arguments) for c in first.farm_calls] == [
        ("store", {"key": "shopping", "value": "milk"})
    ]
    assert second.diverged and second.diverged_by == "model"
    assert result.state is not None
    assert result.state.passed, [p.problem for p in result.state.probes]  # oat milk once
    assert result.state.diverged_by == {1: "model"}
    assert not result.state.other_path  # the farm's calls made the state, not another path


def test_a_probe_whose_read_call_fails_as_text_is_the_scenarios_infra_error(
    tmp_path: Path, settings: Settings
) -> None:
    script = [_call("store", key="delta", value="1"), {"answer": "Stored."}]
    result = _run(tmp_path, 1, script, settings)
    assert result.outcome == "infra_error", result.detail
    assert "state probe delta stored: textual.lookup failed: Error: no entry" in result.detail
