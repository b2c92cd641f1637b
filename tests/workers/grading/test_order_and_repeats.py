"""Partial orders, repeats that change nothing, a turn with no step that may look things up,
and a step credited to an earlier turn's call (issue 34, items 4, 5, 6, 8)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from mcp_farm.schema import (
    Scenario,
    ToolCallRecord,
    TurnResult,
)
from mcp_farm.workers.grading.conversation import grade_conversation
from mcp_farm.workers.grading.counting import repeats_allowed
from mcp_farm.workers.grading.grade import grade

SCHEMAS: dict[str, dict[str, Any]] = {
    name: {"type": "object", "properties": {"q": {}, "id": {}, "text": {}}}
    for name in ("search", "read", "append", "weather")
}
READ_ONLY = frozenset({"search", "read"})


def scenario(*steps: dict[str, Any], **fields: Any) -> Scenario:
    return Scenario.model_validate(
        {"id": "t", "version": 1, "tier": "simple", "prompt": "p", "servers": ["s"]}
        | {"expect": list(steps)}
        | fields
    )


def call(i: int, tool: str, result: str = "", **arguments: Any) -> ToolCallRecord:
    return ToolCallRecord(
        index=i, server="s", tool=tool, arguments=arguments, ok=True, result_text=result
    )


def outcome(s: Scenario, calls: list[ToolCallRecord], read_only: frozenset[str] = READ_ONLY) -> str:
    return grade(s, calls, "done", "answer", SCHEMAS, read_only=read_only).outcome


# Two lookups that need nothing of each other, then a note that uses the first one's result.
TWO_READS = (
    {"tool": "read", "params": {"id": "a"}},
    {"tool": "read", "params": {"id": "b"}, "after": []},
    {"tool": "append", "params": {"text": {"derived_from_step": 0}}, "after": [1]},
)


@pytest.mark.parametrize("calls", ["strict", "lenient"])
def test_independent_steps_pass_in_either_order_under_any_counting(calls: str) -> None:
    s = scenario(*TWO_READS, calls=calls)
    listed = [call(0, "read", "A1", id="a"), call(1, "read", id="b"), call(2, "append", text="A1")]
    swapped = [call(0, "read", id="b"), call(1, "read", "A1", id="a"), call(2, "append", text="A1")]
    assert outcome(s, listed) == "pass"
    assert outcome(s, swapped) == "pass"


def test_a_chained_step_comes_after_its_source_even_when_the_scenario_is_unordered() -> None:
    s = scenario(
        {"tool": "read", "params": {"id": "a"}},
        {"tool": "append", "params": {"text": {"derived_from_step": 0}}},
        order="unordered",
    )
    assert s.expect[1].requires(1, "unordered") == [0]
    early = [call(0, "read", "A1", id="a"), call(1, "append", text="A1")]
    assert outcome(s, early) == "pass"
    late = [call(0, "append", text="A1"), call(1, "read", "A1", id="a")]
    assert outcome(s, late) == "wrong_sequence"


def test_a_step_named_in_after_must_come_first() -> None:
    s = scenario(*TWO_READS)
    dependent_first = [
        call(0, "read", id="b"),
        call(1, "append", text="A1"),
        call(2, "read", "A1", id="a"),
    ]
    assert outcome(s, dependent_first) == "wrong_sequence"


def test_under_strict_a_repeated_read_passes_and_a_repeated_write_is_a_loop() -> None:
    s = scenario({"tool": "read", "params": {"id": "a"}}, {"tool": "append"}, calls="strict")
    read_twice = [call(0, "read", id="a"), call(1, "read", id="a"), call(2, "append", text="x")]
    assert outcome(s, read_twice) == "pass"
    assert outcome(s, read_twice, read_only=frozenset()) == "tool_loop"
    write_twice = [
        call(0, "read", id="a"),
        call(1, "append", text="x"),
        call(2, "append", text="x"),
    ]
    assert outcome(s, write_twice) == "tool_loop"


def test_under_strict_a_step_marked_idempotent_may_be_done_again() -> None:
    steps = ({"tool": "append", "params": {"text": "x"}, "idempotent": True}, {"tool": "read"})
    s = scenario(*steps, calls="strict")
    again = [call(0, "append", text="x"), call(1, "append", text="x"), call(2, "read", id="a")]
    assert outcome(s, again, read_only=frozenset()) == "pass"
    assert repeats_allowed(s, "append") == s.max_repeats


def test_a_session_under_strict_lets_a_read_only_tool_repeat_up_to_max_repeats() -> None:
    s = scenario({"tool": "read"}, {"tool": "append"}, calls="strict")
    assert repeats_allowed(s, "read") == 1
    assert repeats_allowed(s, "read", READ_ONLY) == s.max_repeats
    assert repeats_allowed(s, "append", READ_ONLY) == 1


def conversation(*turns: dict[str, Any]) -> Scenario:
    return Scenario.model_validate(
        {"id": "c", "version": 1, "tier": "simple", "servers": ["s"], "turns": list(turns)}
    )


def turns_of(s: Scenario, counts: list[int], calls: list[ToolCallRecord]) -> list[TurnResult]:
    made, first = [], 0
    for i, n in enumerate(counts):
        made.append(
            TurnResult(
                index=i,
                user=s.turns[i].user,
                first_call=first,
                call_count=n,
                answer="done",
                stop_reason="answer",
                outcome="harness_error",
                detail="not graded",
            )
        )
        first += n
    return made


def conversation_outcome(s: Scenario, counts: list[int], calls: list[ToolCallRecord]) -> str:
    turns = turns_of(s, counts, calls)
    return grade_conversation(s, turns, calls, "answer", SCHEMAS, read_only=READ_ONLY)[1].outcome


def test_allowed_extra_is_honoured_on_a_turn_that_expects_no_call() -> None:
    s = conversation(
        {"user": "read a", "expect": [{"tool": "read", "params": {"id": "a"}}]},
        {"user": "thanks; what's the weather?", "expect": "none", "allowed_extra": ["weather"]},
    )
    looked = [call(0, "read", id="a"), call(1, "weather", q="here")]
    assert conversation_outcome(s, [1, 1], looked) == "pass"
    wrote = [call(0, "read", id="a"), call(1, "append", text="x")]
    assert conversation_outcome(s, [1, 1], wrote) == "wrong_tool"


KNOWN = conversation(
    {"user": "look up a", "expect": [{"tool": "read", "params": {"id": "a"}}]},
    {
        "user": "note what a said",
        "expect": [
            {"tool": "read", "params": {"id": "a"}, "known_from_earlier": True},
            {"tool": "append", "params": {"text": {"derived_from_step": 0}}},
        ],
    },
)


def test_a_step_known_from_earlier_is_credited_to_the_earlier_turns_identical_call() -> None:
    calls = [call(0, "read", "A1", id="a"), call(1, "append", text="A1")]
    assert conversation_outcome(KNOWN, [1, 1], calls) == "pass"
    again = [
        call(0, "read", "A1", id="a"),
        call(1, "read", "A1", id="a"),
        call(2, "append", text="A1"),
    ]
    assert conversation_outcome(KNOWN, [1, 2], again) == "pass"


def test_an_earlier_call_with_other_arguments_does_not_credit_a_known_step() -> None:
    calls = [call(0, "read", "B1", id="b"), call(1, "append", text="B1")]
    assert conversation_outcome(KNOWN, [1, 1], calls) != "pass"


def test_known_from_earlier_on_the_first_turn_fails_the_load_naming_the_field() -> None:
    with pytest.raises(ValidationError, match=r"turns\[0\]\.expect\[0\]\.known_from_earlier"):
        conversation({"user": "u", "expect": [{"tool": "read", "known_from_earlier": True}]})


def failed(i: int, tool: str, error: str, **arguments: Any) -> ToolCallRecord:
    return ToolCallRecord(
        index=i, server="s", tool=tool, arguments=arguments, ok=False, error=error
    )


@pytest.mark.parametrize("idempotent", [True, False])
def test_under_strict_a_copy_of_an_idempotent_step_that_comes_back_as_an_error_is_no_loop(
    idempotent: bool,
) -> None:
    # Copying a file twice: the second copy answers "already exists" and changes nothing.
    steps = (
        {"tool": "append", "params": {"text": "x"}, "idempotent": idempotent},
        {"tool": "read"},
    )
    s = scenario(*steps, calls="strict")
    twice = [
        call(0, "append", text="x"),
        failed(1, "append", "already exists", text="x"),
        call(2, "read", id="a"),
    ]
    assert outcome(s, twice, read_only=frozenset()) == ("pass" if idempotent else "tool_loop")


def test_an_erroring_call_of_an_idempotent_step_with_no_good_copy_before_it_is_still_wrong() -> (
    None
):
    steps = ({"tool": "append", "params": {"text": "x"}, "idempotent": True}, {"tool": "read"})
    s = scenario(*steps, calls="strict")
    other = [
        call(0, "append", text="x"),
        failed(1, "append", "already exists", text="y"),
        call(2, "read", id="a"),
    ]
    assert outcome(s, other, read_only=frozenset()) == "wrong_params"


ONLY_KNOWN = (
    {"user": "look up a", "expect": [{"tool": "read", "params": {"id": "a"}}]},
    {
        "user": "look up a again",
        "expect": [{"tool": "read", "params": {"id": "a"}, "known_from_earlier": True}],
    },
)


def test_a_turn_whose_steps_earlier_calls_all_did_still_needs_a_call_of_its_own() -> None:
    s = conversation(*ONLY_KNOWN)
    silent = [call(0, "read", "A1", id="a")]
    turns = turns_of(s, [1, 0], silent)
    graded, verdict = grade_conversation(s, turns, silent, "answer", SCHEMAS, read_only=READ_ONLY)
    assert verdict.outcome == "no_tool_call"
    assert "known_from_earlier" in graded[1].detail and "min_calls: 0" in graded[1].detail
    looked = [call(0, "read", "A1", id="a"), call(1, "read", "A1", id="a")]
    assert conversation_outcome(s, [1, 1], looked) == "pass"


def test_min_calls_0_lets_a_turn_stand_on_earlier_calls_alone() -> None:
    s = conversation(ONLY_KNOWN[0], ONLY_KNOWN[1] | {"min_calls": 0})
    assert conversation_outcome(s, [1, 0], [call(0, "read", "A1", id="a")]) == "pass"


def test_min_calls_makes_a_turn_with_only_allowed_extra_look_something_up() -> None:
    s = conversation(
        ONLY_KNOWN[0],
        {"user": "what's the weather?", "expect": "none", "allowed_extra": ["weather"]}
        | {"min_calls": 1},
    )
    first = [call(0, "read", id="a")]
    assert conversation_outcome(s, [1, 0], first) == "no_tool_call"
    assert conversation_outcome(s, [1, 1], [*first, call(1, "weather", q="here")]) == "pass"


@pytest.mark.parametrize(
    "turn",
    [
        {"user": "u", "expect": "none", "min_calls": 1},
        {"user": "u", "must_ask": ["which"], "allowed_extra": ["search"], "min_calls": 1},
    ],
)
def test_min_calls_on_a_turn_where_no_call_is_right_fails_the_load(turn: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match=r"min_calls: 1.*no call is right"):
        conversation(ONLY_KNOWN[0], turn)
