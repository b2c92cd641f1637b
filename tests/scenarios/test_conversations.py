"""Conversations through the real fixture servers: the bundled suites hold the kinds issue 28
asks for, every bundled conversation's ideal agent passes in every prompt mode, guessing
instead of asking is `guessed`, and `continue` completes a failed turn (the steps the model
did are not made again; a farm call that fails stops the conversation) so a later turn can
pass after it."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import Scenario, Settings, TrialSpec
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import ideal_call_problems, ideal_script, trial

pytestmark = pytest.mark.integration

SUITE = load_suite("conversations")
BY_ID = {s.id: s for s in SUITE.scenarios}
MODES = ["native", "json", "grammar"]


def _turn_script(scenario: Scenario, i: int) -> list[dict[str, Any]]:
    return ideal_script(scenario.turn_scenario(i))


def guessing(scenario: Scenario, i: int) -> list[dict[str, Any]]:
    """The ideal agent, except that in must-ask turn i it does the next turn's calls at once
    (a guessed value) instead of asking, then answers as if done."""
    script: list[dict[str, Any]] = []
    for k in range(len(scenario.turns)):
        if k == i:
            guess = [item for item in _turn_script(scenario, k + 1) if "call" in item]
            script += [*guess, {"answer": "Done."}]
        else:
            script += _turn_script(scenario, k)
    return script


def _elicits(s: Scenario) -> list[str]:
    """The actions of the scenario's scripted elicitation answers, on it and on its turns."""
    return [e.action for e in [*s.elicit, *(e for t in s.turns for e in t.elicit)]]


def test_the_conversation_suites_are_the_sizes_issue_28_promises() -> None:
    third = load_suite("conversations-thirdparty").scenarios
    every = [*SUITE.scenarios, *third]
    kinds = {
        "asks": [s for s in every if any(t.must_ask for t in s.turns)],
        "tools change": [
            s for s in every if any(t.event == "tools_changed" and t.trigger for t in s.turns)
        ],
        # An unscripted request is answered `decline` by the farm: its scenario scripts none.
        "elicitation": [s for s in every if _elicits(s) or "elicitation" in s.tags],
        "never or confirm": [
            s for s in every if s.never or any(t.never for t in s.turns) or s.confirm_destructive
        ],
        "recovery": [
            s
            for s in every
            if "recovery" in s.tags and any(st.expect_error for t in s.turns for st in t.expect)
        ],
    }
    least = {"asks": 8, "tools change": 5, "elicitation": 5, "never or confirm": 5, "recovery": 5}
    sizes = {kind: len(found) for kind, found in kinds.items()}
    assert all(sizes[kind] >= n for kind, n in least.items()), sizes
    assert len(SUITE.scenarios) >= 30
    assert len(third) >= 5
    assert all(s.turns for s in every)
    assert {a for s in kinds["elicitation"] for a in _elicits(s)} >= {"accept", "decline", "cancel"}
    assert all(len(s.turns) >= 2 for s in SUITE.scenarios)
    assert any(s.on_turn_failure == "continue" for s in SUITE.scenarios)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", SUITE.scenarios, ids=lambda s: s.id)
def test_an_ideal_agent_passes_every_turn_of_every_conversation(
    scenario: Scenario, mode: str, warm: tuple[Runtime, Settings]
) -> None:
    runtime, settings = warm
    spec = trial(scenario, ideal_script(scenario), suite="conversations", prompt=mode)
    result = runtime.run(spec, settings)
    assert result.outcome == "pass", result.detail
    assert [t.outcome for t in result.turn_results] == ["pass"] * len(scenario.turns)
    assert ideal_call_problems(scenario, result) == []


ASKING = [
    pytest.param(s, i, id=f"{s.id}:turn{i}")
    for s in SUITE.scenarios
    for i, turn in enumerate(s.turns)
    # Under `confirm_destructive` the guess is a destructive call, graded `forbidden_call`
    # (tests/scenarios/test_never_and_recovery.py).
    if turn.must_ask and not s.confirm_destructive
]


@pytest.mark.parametrize(("scenario", "i"), ASKING)
def test_calling_a_tool_instead_of_asking_is_graded_guessed(
    scenario: Scenario, i: int, warm: tuple[Runtime, Settings]
) -> None:
    runtime, settings = warm
    result = runtime.run(trial(scenario, guessing(scenario, i), suite="conversations"), settings)
    assert result.outcome == "guessed", result.detail
    assert result.turn_results[i].outcome == "guessed"
    assert result.detail.startswith(f"turn {i + 1}: ")


def test_a_reply_that_asks_nothing_is_an_output_mismatch(warm: tuple[Runtime, Settings]) -> None:
    scenario = BY_ID["conv.free-hour-ask-day"]
    script = [{"answer": "Sure, I'll find one."}, *_turn_script(scenario, 1)]
    runtime, settings = warm
    result = runtime.run(trial(scenario, script, suite="conversations"), settings)
    assert result.outcome == "output_mismatch", result.detail
    assert result.turn_results[0].outcome == "output_mismatch"


def _first_turn_fails(scenario: Scenario) -> list[dict[str, Any]]:
    return [{"answer": "I can't do that."}, *_turn_script(scenario, 1)]


def test_after_a_failed_turn_continue_lets_the_next_turn_pass_on_the_expected_state(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = BY_ID["conv.groceries-two-adds"]
    runtime, settings = warm
    result = runtime.run(
        trial(scenario, _first_turn_fails(scenario), suite="conversations"), settings
    )
    first, second = result.turn_results
    assert (first.outcome, second.outcome) == ("no_tool_call", "pass")
    assert result.outcome == "no_tool_call"
    assert [c.tool for c in first.farm_calls] == ["append_to_note"]
    assert first.farm_calls[0].ok
    shown = [m for m in result.transcript if m.farm]
    assert shown and shown[-1].content == scenario.turns[0].example_answer


def test_a_value_chained_from_a_failed_turn_comes_from_the_farms_own_call(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = BY_ID["conv.note-then-append"].model_copy(update={"on_turn_failure": "continue"})
    script = _first_turn_fails(scenario)
    spec = trial(scenario, script, suite="conversations")
    spec = TrialSpec.model_validate(
        spec.model_dump(mode="json", exclude={"trial_id"}) | {"on_turn_failure": "continue"}
    )
    runtime, settings = warm
    result = runtime.run(spec, settings)
    assert [t.outcome for t in result.turn_results] == ["no_tool_call", "pass"]


def test_under_stop_a_failed_turn_ends_the_conversation(warm: tuple[Runtime, Settings]) -> None:
    scenario = BY_ID["conv.note-then-append"]
    runtime, settings = warm
    result = runtime.run(
        trial(scenario, _first_turn_fails(scenario), suite="conversations"), settings
    )
    assert [t.outcome for t in result.turn_results] == ["no_tool_call"]
    assert result.tool_calls == []


def test_a_value_from_an_earlier_turn_that_is_not_there_is_wrong_params(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = BY_ID["conv.priya-dinner-reply"]
    script = [
        *_turn_script(scenario, 0),
        {
            "call": {
                "name": "reply_to_email",
                "arguments": {"email_id": "msg-1043", "body": "Friday works."},
            }
        },
        {"answer": "Replied."},
    ]
    runtime, settings = warm
    result = runtime.run(trial(scenario, script, suite="conversations"), settings)
    assert [t.outcome for t in result.turn_results] == ["pass", "wrong_params"], result.detail
    assert "email_id" in result.turn_results[1].detail


def test_under_continue_a_malformed_reply_is_a_failed_turn_and_the_next_turn_is_graded(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = BY_ID["conv.groceries-two-adds"]
    script = [{"oops": "no call, no answer"}, *_turn_script(scenario, 1)]
    runtime, settings = warm
    result = runtime.run(trial(scenario, script, suite="conversations"), settings)
    first, second = result.turn_results
    assert (first.outcome, second.outcome) == ("format_error", "pass")
    assert "none of call/answer/text" in first.detail
    assert result.detail.startswith("turn 1: scripted reply 0 has none")


def _continued(scenario: Scenario, script: list[dict[str, Any]]) -> TrialSpec:
    spec = trial(scenario, script, suite="conversations")
    return TrialSpec.model_validate(
        spec.model_dump(mode="json", exclude={"trial_id"}) | {"on_turn_failure": "continue"}
    )


def test_under_continue_a_step_the_model_did_is_not_made_again_by_the_farm(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = BY_ID["conv.groceries-two-adds"]
    # Turn 1: the right append, then an answer that misses "eggs" (output_mismatch). Turn 2
    # reads the note after its own append: it must hold the eggs once.
    append_eggs = [item for item in _turn_script(scenario, 0) if "call" in item]
    read = {"call": {"name": "read_note", "arguments": {"note_id": "groceries"}}}
    script = [*append_eggs, {"answer": "Done."}, *_turn_script(scenario, 1)[:-1], read]
    runtime, settings = warm
    result = runtime.run(
        trial(scenario, [*script, {"answer": "Added bread."}], suite="conversations"), settings
    )
    first, second = result.turn_results
    assert (first.outcome, second.outcome) == ("output_mismatch", "pass"), result.detail
    assert (first.farm_calls, first.model_steps) == ([], {0: 0})
    note = result.tool_calls[-1].result_text
    assert (note.count("eggs"), note.count("bread")) == (1, 2)  # sourdough bread, and bread
    shown = [m for m in result.transcript if m.farm]
    assert [c.name for m in shown for c in m.tool_calls or []] == ["append_to_note"]


def test_a_value_chained_from_a_step_the_model_did_in_a_failed_turn_is_the_models(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = BY_ID["conv.note-then-append"]
    create = [item for item in _turn_script(scenario, 0) if "call" in item]
    script = [*create, {"answer": "Done."}, *_turn_script(scenario, 1)]
    runtime, settings = warm
    result = runtime.run(_continued(scenario, script), settings)
    assert [t.outcome for t in result.turn_results] == ["output_mismatch", "pass"], result.detail
    assert result.turn_results[0].farm_calls == []
    assert [(c.tool, c.ok) for c in result.tool_calls] == [
        ("create_note", True),
        ("append_to_note", True),
    ]


def test_a_farm_call_that_fails_stops_the_conversation_and_says_so_in_the_detail(
    warm: tuple[Runtime, Settings],
) -> None:
    # The model creates the note with half its content (wrong_params); the farm's create of
    # the expected note then fails, since the model's note has that id already.
    scenario = BY_ID["conv.note-then-append"]
    half = {"title": "Packing list", "content": "- passport"}
    script = [{"call": {"name": "create_note", "arguments": half}}, {"answer": "Created it."}]
    runtime, settings = warm
    result = runtime.run(_continued(scenario, [*script, *_turn_script(scenario, 1)]), settings)
    [first] = result.turn_results
    assert (result.outcome, first.outcome) == ("wrong_params", "wrong_params"), result.detail
    assert [(c.tool, c.ok) for c in first.farm_calls] == [("create_note", False)]
    assert "already exists" in first.farm_problem
    assert "not continued after turn 1: the farm's call of step 0 (create_note) failed" in (
        result.detail
    )
    assert [c.tool for c in result.tool_calls] == ["create_note"]  # turn 2 was not sent


def _strict_continued(scenario: Scenario, script: list[dict[str, Any]]) -> TrialSpec:
    spec = trial(scenario, script, suite="conversations")
    return TrialSpec.model_validate(
        spec.model_dump(mode="json", exclude={"trial_id"})
        | {"on_turn_failure": "continue", "calls": "strict"}
    )


def _cut_short_first_turn(scenario: Scenario) -> list[dict[str, Any]]:
    """Turn 1 read past `max_repeats` (the session stops the repeat as a loop; a read-only
    tool may repeat up to that bound even under strict counting), with its append and answer
    left unused behind the cut."""
    read = {"call": {"name": "read_note", "arguments": {"note_id": "groceries"}}}
    return [*[read] * (scenario.max_repeats + 1), *_turn_script(scenario, 0)]


def test_a_per_turn_script_starts_each_turn_at_its_own_replies_after_a_cut_short_turn(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = BY_ID["conv.groceries-two-adds"]
    script = [
        *({"turn": 0} | item for item in _cut_short_first_turn(scenario)),
        *({"turn": 1} | item for item in _turn_script(scenario, 1)),
    ]
    runtime, settings = warm
    result = runtime.run(_strict_continued(scenario, script), settings)
    first, second = result.turn_results
    assert (first.stop_reason, first.outcome, second.outcome) == (
        "tool_loop",
        "wrong_tool",  # never called append_to_note: earlier in the taxonomy than the loop
        "pass",
    ), result.detail
    reads = ["read_note"] * (scenario.max_repeats + 1)
    assert [c.tool for c in result.tool_calls] == [*reads, "append_to_note"]


def test_a_flat_script_hands_a_cut_short_turns_leftover_replies_to_the_next_turn(
    warm: tuple[Runtime, Settings],
) -> None:
    # The same replies without turn numbers: turn 2 gets turn 1's unused append of eggs.
    scenario = BY_ID["conv.groceries-two-adds"]
    script = [*_cut_short_first_turn(scenario), *_turn_script(scenario, 1)]
    runtime, settings = warm
    result = runtime.run(_strict_continued(scenario, script), settings)
    first, second = result.turn_results
    assert (first.stop_reason, second.outcome) == ("tool_loop", "wrong_params"), result.detail
