"""Recovery after an error result (`recovered`): a failed call counts as recovered only when a
later successful call did a step, and in a conversation only a call of the same turn that did
one of that turn's steps; a one-prompt scenario reads the whole trial as before."""

from __future__ import annotations

from typing import Any

from mcp_farm.schema import Scenario, ToolCallRecord, TurnResult
from mcp_farm.workers.grading.conversation import recovered

APPEND = {"tool": "append_to_note", "params": {"note_id": "groceries"}}


def call(i: int, tool: str, ok: bool = True, **arguments: Any) -> ToolCallRecord:
    return ToolCallRecord(
        index=i,
        server="notes",
        tool=tool,
        arguments=arguments,
        ok=ok,
        error=None if ok else "no note with id 'grocery-list'",
    )


def one_prompt() -> Scenario:
    return Scenario.model_validate(
        {
            "id": "t",
            "version": 1,
            "tier": "simple",
            "prompt": "Add eggs to my groceries.",
            "servers": ["notes"],
            "expect": [APPEND],
            "allowed_extra": ["list_notes"],
        }
    )


def conversation() -> Scenario:
    turn = {"expect": [APPEND], "allowed_extra": ["list_notes"]}
    return Scenario.model_validate(
        {
            "id": "c",
            "version": 1,
            "tier": "moderate",
            "servers": ["notes"],
            "turns": [{"user": "Add eggs.", **turn}, {"user": "And bread.", **turn}],
        }
    )


def turns(*counts: int) -> list[TurnResult]:
    """Turns holding `counts[i]` calls each, in order."""
    found, first = [], 0
    for i, n in enumerate(counts):
        found.append(
            TurnResult(
                index=i,
                user="u",
                first_call=first,
                call_count=n,
                stop_reason="answer",
                outcome="pass",
            )
        )
        first += n
    return found


WRONG = {"note_id": "grocery-list"}
RIGHT = {"note_id": "groceries"}


def test_a_one_prompt_failed_call_followed_by_a_step_has_recovered() -> None:
    made = [call(0, "append_to_note", False, **WRONG), call(1, "append_to_note", **RIGHT)]
    assert recovered(one_prompt(), made, None, []) is True


def test_a_one_prompt_failed_call_followed_only_by_a_look_up_has_not_recovered() -> None:
    made = [call(0, "append_to_note", False, **WRONG), call(1, "list_notes")]
    assert recovered(one_prompt(), made, None, []) is False


def test_a_trial_without_a_failed_call_has_no_recovery_verdict() -> None:
    assert recovered(one_prompt(), [call(0, "append_to_note", **RIGHT)], None, []) is None


def test_a_step_done_in_a_later_turn_does_not_recover_an_earlier_turns_error() -> None:
    made = [call(0, "append_to_note", False, **WRONG), call(1, "append_to_note", **RIGHT)]
    assert recovered(conversation(), made, None, turns(1, 1)) is False


def test_a_step_done_later_in_the_same_turn_recovers_its_error() -> None:
    made = [
        call(0, "append_to_note", False, **WRONG),
        call(1, "append_to_note", **RIGHT),
        call(2, "append_to_note", **RIGHT),
    ]
    assert recovered(conversation(), made, None, turns(2, 1)) is True


def test_every_turns_error_needs_a_step_of_its_own_turn() -> None:
    made = [
        call(0, "append_to_note", **RIGHT),
        call(1, "append_to_note", False, **WRONG),
        call(2, "list_notes"),
        call(3, "append_to_note", False, **WRONG),
        call(4, "append_to_note", **RIGHT),
    ]
    # Turn 1's error is fixed in turn 1; turn 0's step came before turn 1's error.
    assert recovered(conversation(), made, None, turns(1, 4)) is True
    assert recovered(conversation(), made, None, turns(3, 2)) is False


def unknown(i: int, tool: str) -> ToolCallRecord:
    """A call to a tool no server offers, as the session records it."""
    return ToolCallRecord(
        index=i, server=None, tool=tool, arguments={}, ok=False, error=f"unknown tool {tool}"
    )


def test_a_call_to_a_tool_no_server_offers_is_no_error_result_to_recover_from() -> None:
    made = [unknown(0, "add_to_note"), call(1, "append_to_note", **RIGHT)]
    assert recovered(one_prompt(), made, None, []) is None
    # Beside a real error result, only that one is judged.
    made = [unknown(0, "add_to_note"), call(1, "append_to_note", False, **WRONG)]
    assert recovered(one_prompt(), [*made, call(2, "append_to_note", **RIGHT)], None, []) is True
    assert recovered(one_prompt(), made, None, []) is False
