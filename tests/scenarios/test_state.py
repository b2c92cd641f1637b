"""Grading by state on the real fixture servers (the `state` suite): a doubled write passes by
calls and fails by state, another path to the right state is recorded as `other_path`, a
failed turn under `continue` is set back before the next, and a hidden trigger changes the
tool list without the model seeing a tool for it."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import Scenario, Settings, TrialResult
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import ideal_script, trial

pytestmark = pytest.mark.integration

SUITE = "state"
DOUBLED = [
    (suite, s.id)
    for suite in (SUITE, "thirdparty")
    for s in load_suite(suite).scenarios
    if "doubled" in s.tags
]


def _scenario(scenario_id: str, suite: str = SUITE) -> Scenario:
    return next(s for s in load_suite(suite).scenarios if s.id == scenario_id)


def _run(
    warm: tuple[Runtime, Settings],
    scenario: Scenario,
    script: list[dict[str, Any]],
    suite: str = SUITE,
) -> TrialResult:
    runtime, settings = warm
    return runtime.run(trial(scenario, script, suite=suite), settings)


def test_the_state_suite_has_five_doubled_writes_and_three_conversations_to_set_back() -> None:
    scenarios = load_suite(SUITE).scenarios
    probed = [s for suite in (SUITE, "thirdparty") for s in load_suite(suite).scenarios if s.probes]
    assert len(probed) >= 25
    assert len(DOUBLED) >= 5
    assert sum(1 for s in scenarios if s.turns and s.on_turn_failure == "continue") >= 3
    assert all(s.grading == "both" for s in scenarios)


@pytest.mark.parametrize(("suite", "scenario_id"), DOUBLED)
def test_a_write_made_twice_passes_by_calls_and_is_wrong_state_by_state(
    suite: str, scenario_id: str, warm: tuple[Runtime, Settings]
) -> None:
    scenario = _scenario(scenario_id, suite)
    ideal = ideal_script(scenario)
    doubled = [ideal[0], ideal[0], *ideal[1:]]
    result = _run(warm, scenario, doubled, suite)
    assert result.outcome == "wrong_state", result.detail
    assert result.state is not None
    assert result.state.calls_passed and not result.state.passed
    assert result.state.calls_outcome == "pass"
    failed = [p for p in result.state.probes if not p.passed]
    assert failed and failed[0].found


def test_the_ideal_agent_passes_by_both_with_every_probe_recorded(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = _scenario("state.fs-move-credits")
    result = _run(warm, scenario, ideal_script(scenario))
    assert result.outcome == "pass", result.detail
    assert result.state is not None and result.state.passed and not result.state.other_path
    assert [p.label for p in result.state.probes] == ["gone from the Desktop", "in Documents"]
    assert result.state.probes[0].found == "null"


def test_another_path_to_the_right_state_keeps_the_calls_outcome_and_is_flagged_other_path(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = _scenario("state.notes-groceries-once")
    body = (
        "- red lentils\n- tinned tomatoes\n- coconut milk\n- limes\n- sourdough bread\n- oat milk"
    )
    script = [
        {"call": {"name": "update_note", "arguments": {"note_id": "groceries", "content": body}}},
        {"answer": "Added oat milk to your groceries note."},
    ]
    result = _run(warm, scenario, script)
    assert result.outcome == "wrong_tool", result.detail
    assert result.state is not None and result.state.passed and result.state.other_path
    by_state = scenario.model_copy(update={"grade_by": "state"})
    from mcp_farm.workers.state import combined

    outcome, _detail, _v = combined("state", "wrong_tool", "", result.state.probes)
    assert (outcome, by_state.grading) == ("pass", "state")


def test_a_wrong_write_in_turn_one_is_set_back_before_turn_two_under_continue(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = _scenario("state.notes-two-appends")
    wrong = {
        "call": {
            "name": "append_to_note",
            "arguments": {"note_id": "groceries", "text": "- coffee"},
        }
    }
    turn_two = ideal_script(scenario.turn_scenario(1))
    result = _run(warm, scenario, [wrong, {"answer": "Added."}, *turn_two])
    first, second = result.turn_results
    assert first.outcome == "wrong_params" and first.restored
    assert not second.diverged
    # Set back, then the farm's expected call: turn 2 starts from oat milk once, no coffee.
    assert second.outcome == "pass", second.detail
    assert all(p.passed for p in second.probes)
    assert result.state is not None and result.state.restored == [0]


def test_a_doubled_write_in_turn_one_on_an_in_memory_server_is_set_back_by_its_hidden_restore(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = _scenario("state.board-two-tasks")
    ideal = ideal_script(scenario)
    doubled = [ideal[0], ideal[0], *ideal[1:]]
    result = _run(warm, scenario, doubled)
    first, second = result.turn_results
    # The board offers a hidden snapshot and restore: the doubled task is undone.
    assert first.outcome == "wrong_state" and first.restored
    assert second.outcome == "pass", second.detail
    assert result.outcome == "wrong_state"


def test_a_hidden_trigger_changes_the_tool_list_without_a_tool_the_model_sees(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = _scenario("state.board-hidden-upgrade")
    result = _run(warm, scenario, ideal_script(scenario))
    assert result.outcome == "pass", result.detail
    listed = result.provenance.server_tools["board"]
    assert set(result.provenance.server_starts) == {"board"}  # how each server started
    assert "farm_set_plan" in listed  # the server lists it; the model is never offered it
    offered = str(result.transcript[0].content) + str(result.transcript[0].model_dump())
    assert "farm_set_plan" not in offered and "farm_snapshot" not in offered
    assert result.turn_results[1].tools_added
