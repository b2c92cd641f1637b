"""Numbers compared as the tool's schema types them, and `from_key` values taken whole."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_farm.schema import (
    ParamMatcher,
    Scenario,
    ToolCallRecord,
    TurnResult,
)
from mcp_farm.workers.grading.chained import Chain
from mcp_farm.workers.grading.conversation import grade_conversation
from mcp_farm.workers.grading.grade import grade
from mcp_farm.workers.grading.matchers import check
from mcp_farm.workers.grading.typed import Typed

# A tool schema shaped like those servers list: nested objects, arrays, a `$ref`, a union.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ratio": {"type": "number"},
        "count": {"type": "integer"},
        "maybe": {"type": ["number", "null"]},
        "label": {"type": "string"},
        "points": {"type": "array", "items": {"$ref": "#/$defs/Point"}},
        "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "number"}]},
        "limits": {"type": "object", "additionalProperties": {"type": "number"}},
        "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    },
    "$defs": {
        "Point": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "n": {"type": "integer"}},
        }
    },
}


def m(spec: Any) -> ParamMatcher:
    return ParamMatcher.model_validate(spec)


@pytest.mark.parametrize(
    ("arg", "matcher", "value", "ok"),
    [
        ("ratio", 0.0, 0, True),
        ("ratio", 0, 0.0, True),
        ("ratio", 0.0, False, False),
        ("ratio", 0.5, 0.25, False),
        ("count", 5, 5.0, False),
        ("count", 5, True, False),
        ("count", 5, 5, True),
        ("maybe", 2, 2.0, True),
        ("label", 5, 5.0, False),  # a place not typed as a number: types held as written
        ("either", 3, 3.0, False),
        ("ratio", {"one_of": [0.5, 1.0]}, 1, True),
        ("count", {"one_of": [1, 2]}, 2.0, False),
        ("points", {"exact": [{"x": 1, "n": 2}]}, [{"x": 1.0, "n": 2}], True),
        ("points", {"exact": [{"x": 1, "n": 2}]}, [{"x": 1, "n": 2.0}], False),
        ("points", {"items": {"keys": {"x": 0.0, "n": 0}}}, [{"x": 0, "n": 0}], True),
        ("points", {"contains": {"keys": {"x": 3}}}, [{"x": 1}, {"x": 3.0}], True),
        ("points", {"items": {"keys": {"n": 1}}}, [{"n": 1.0}], False),
        ("pair", {"exact": [1, 2]}, [1, 2.0], True),
        ("pair", {"exact": [1, 2]}, [1.0, 2], False),
        ("limits", {"keys": {"cpu": 1}}, {"cpu": 1.0}, True),
        ("ratio", {"optional": 1.5}, 1.5, True),
    ],
)
def test_exact_and_one_of_compare_numbers_as_the_schema_types_their_place(
    arg: str, matcher: Any, value: Any, ok: bool
) -> None:
    assert (check(m(matcher), value, typed=Typed.argument(SCHEMA, arg)) is None) is ok


def test_without_a_schema_number_types_are_held_as_written() -> None:
    assert check(m(0.0), 0) is not None
    assert check(m(5), 5.0) is not None
    assert check(m({"number": 0.0}), 0) is None  # the explicit form takes either


def test_a_schema_that_refers_to_itself_is_followed_a_bounded_way() -> None:
    looped = {"$defs": {"A": {"$ref": "#/$defs/A"}}, "properties": {"a": {"$ref": "#/$defs/A"}}}
    assert Typed.argument(looped, "a").numbers() == "held"
    assert check(m(1), 1.0, typed=Typed.argument(looped, "a")) is not None


def test_a_whole_number_for_a_number_parameter_passes_the_grade() -> None:
    # An outside checker's case: `exact: 0.0` refused `0` on every one of 51 outputs.
    scenario = Scenario.model_validate(
        {
            "id": "t.zero",
            "version": 1,
            "tier": "simple",
            "prompt": "Set the discount to nothing.",
            "servers": ["s"],
            "expect": [{"tool": "set_discount", "params": {"rate": 0.0, "items": {"exact": [1]}}}],
        }
    )
    schema = {
        "type": "object",
        "properties": {
            "rate": {"type": "number"},
            "items": {"type": "array", "items": {"type": "integer"}},
        },
    }
    right = ToolCallRecord(
        index=0, server="s", tool="set_discount", arguments={"rate": 0, "items": [1]}, ok=True
    )
    floats = right.model_copy(update={"arguments": {"rate": 0, "items": [1.0]}})
    schemas = {"set_discount": schema}
    assert grade(scenario, [right], "Done.", "answer", schemas).outcome == "pass"
    graded = grade(scenario, [floats], "Done.", "answer", schemas)
    assert graded.outcome == "wrong_params"
    assert "items" in graded.detail


REFUND_SCHEMAS: dict[str, dict[str, Any]] = {
    "pay": {"type": "object", "properties": {"amount": {"type": "number"}}},
    "refund": {
        "type": "object",
        "properties": {
            "ref": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "amount": {"type": "number"}},
            }
        },
    },
}
PAID = '{"id": "p-1", "amount": 0}'


def _refund(pay: float, refund: float) -> tuple[Scenario, list[TurnResult], list[ToolCallRecord]]:
    """Pay nothing, then refund that payment: turn 1 takes the payment's id from turn 0."""
    taken = {"derived_from_step": 0, "from_turn": 0, "from_key": "id"}
    ref = {"keys": {"id": taken, "amount": {"exact": 0}}}
    convo = Scenario.model_validate(
        {
            "id": "c",
            "version": 1,
            "tier": "simple",
            "servers": ["s"],
            "turns": [
                {"user": "pay nothing", "expect": [{"tool": "pay", "params": {"amount": 0}}]},
                {"user": "refund it", "expect": [{"tool": "refund", "params": {"ref": ref}}]},
            ],
        }
    )
    calls = [
        ToolCallRecord(
            index=0, server="s", tool="pay", arguments={"amount": pay}, ok=True, result_text=PAID
        ),
        ToolCallRecord(
            index=1,
            server="s",
            tool="refund",
            arguments={"ref": {"id": "p-1", "amount": refund}},
            ok=True,
        ),
    ]
    turns = [
        TurnResult(
            index=i,
            user=user,
            first_call=i,
            call_count=1,
            stop_reason="answer",
            outcome="pass",
            answer="done",
        )
        for i, user in enumerate(["pay nothing", "refund it"])
    ]
    return convo, turns, calls


@pytest.mark.parametrize(("pay", "refund"), [(0, 0), (0.0, 0), (0, 0.0), (0.0, 0.0)])
def test_a_value_from_an_earlier_turn_is_checked_with_numbers_typed_by_the_schemas(
    pay: float, refund: float
) -> None:
    # The earlier turn's step is found as its grade found it, and the whole argument that
    # carries the value is judged with the tool's schema: `0.0` is `0` for a `number`.
    convo, turns, calls = _refund(pay, refund)
    graded, verdict = grade_conversation(convo, turns, calls, "answer", REFUND_SCHEMAS)
    assert [t.outcome for t in graded] == ["pass", "pass"], [t.detail for t in graded]
    assert verdict.outcome == "pass"


def test_a_value_from_an_earlier_turn_still_holds_a_wrong_number_wrong() -> None:
    convo, turns, calls = _refund(0.0, 0.5)
    graded, _verdict = grade_conversation(convo, turns, calls, "answer", REFUND_SCHEMAS)
    assert graded[1].outcome == "wrong_params"
    assert "amount" in graded[1].detail


def _source(text: str) -> Chain:
    record = ToolCallRecord(index=0, server="s", tool="t", arguments={}, ok=True, result_text=text)
    return Chain({0: [record]}, before=1)


GRAPH = (
    '{"entities": [{"name": "Ada Lovelace", "entityType": "person", '
    '"observations": ["Status: paused since May", "drinks tea"]}], '
    '"relations": [], "note": "Budget: 120000 EUR"}'
)


@pytest.mark.parametrize(
    ("key", "value", "ok"),
    [
        ("observations", "Status: paused since May", True),
        ("observations", "drinks tea", True),
        ("observations", "Status: paused", False),  # a part of the string, not the value
        ("observations", "paused", False),
        ("name", "Ada Lovelace", True),
        ("name", "Ada", False),
        ("note", 120000, False),
        ("note", "Budget: 120000 EUR", True),
        ("entities[0].observations[0]", "Status: paused since May", True),
        ("entities[0].observations[0]", "Status: paused", False),
    ],
)
def test_a_value_picked_by_from_key_must_be_the_whole_value_under_it(
    key: str, value: Any, ok: bool
) -> None:
    matcher = m({"derived_from_step": 0, "from_key": key})
    assert (check(matcher, value, _source(GRAPH)) is None) is ok


def test_without_from_key_a_bounded_part_of_a_string_still_counts() -> None:
    derived = m({"derived_from_step": 0})
    assert check(derived, 120000, _source(GRAPH)) is None
    assert check(derived, "Ada Lovelace", _source(GRAPH)) is None


def test_from_key_on_a_result_that_is_not_json_says_so() -> None:
    repr_result = "[Entity(name='Ada Lovelace', observations=['Status: paused since May'])]"
    matcher = m({"derived_from_step": 0, "from_key": "observations"})
    reason = check(matcher, "Status: paused since May", _source(repr_result)) or ""
    assert "not a JSON object or array" in reason
    assert "from_regex" in reason
    assert "Entity(name=" in reason
    missing = check(m({"derived_from_step": 0, "from_key": "status"}), "x", _source(GRAPH))
    assert "holds no key 'status'" in (missing or "")
    wrong = check(matcher, "Status: paused", _source(GRAPH)) or ""
    assert "is not the value of 'observations'" in wrong
