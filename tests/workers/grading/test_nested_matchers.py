"""Matchers inside arrays and objects, optional arguments, and chained values taken whole."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_farm.schema import (
    ParamMatcher,
    ToolCallRecord,
)
from mcp_farm.workers.grading.chained import (
    Chain,
    found_in,
)
from mcp_farm.workers.grading.matchers import check


def m(spec: Any) -> ParamMatcher:
    return ParamMatcher.model_validate(spec)


def result(text: str, index: int = 0) -> ToolCallRecord:
    return ToolCallRecord(
        index=index, server="s", tool="t", arguments={}, ok=True, result_text=text
    )


def chain(*texts: str, before: int | None = None) -> Chain:
    return Chain({0: [result(t, i) for i, t in enumerate(texts)]}, before=before)


@pytest.mark.parametrize(
    ("matcher", "value", "ok"),
    [
        ({"optional": False}, False, True),
        ({"optional": False}, True, False),
        ({"optional": {"regex": "a+"}}, "aaa", True),
        ({"optional": {"regex": "a+"}}, "b", False),
        ({"optional": None}, None, True),
        ({"items": {"regex": ".*@tessera\\.dev"}}, ["a@tessera.dev", "b@tessera.dev"], True),
        ({"items": {"regex": ".*@tessera\\.dev"}}, ["a@tessera.dev", "b@gmail.com"], False),
        ({"items": {"regex": ".*"}}, [], True),
        ({"items": {"regex": ".*"}}, "not an array", False),
        ({"items": [1, {"number": 2, "tolerance": 0.5}]}, [1, 2.4], True),
        ({"items": [1, {"number": 2, "tolerance": 0.5}]}, [1, 2.4, 3], False),
        ({"items": [1, {"number": 2, "tolerance": 0.5}]}, [2.4, 1], False),
        ({"items": {"exact": [1, 2]}}, [[1, 2], [1, 2]], True),
        ({"contains": "priya"}, ["dana", "priya"], True),
        ({"contains": "priya"}, ["dana"], False),
        ({"contains": "priya"}, [], False),
        ({"contains": ["dana", "priya"]}, ["priya", "jonas", "dana"], True),
        ({"contains": ["dana", "priya"]}, ["priya", "jonas"], False),
        ({"items": {"regex": "[a-z]+"}, "contains": "dana"}, ["dana", "jonas"], True),
        ({"items": {"regex": "[a-z]+"}, "contains": "dana"}, ["Dana!", "dana"], False),
        ({"keys": {"a": 1, "b": {"optional": True}}}, {"a": 1}, True),
        ({"keys": {"a": 1, "b": {"optional": True}}}, {"a": 1, "b": True}, True),
        ({"keys": {"a": 1, "b": {"optional": True}}}, {"a": 1, "b": False}, False),
        ({"keys": {"a": 1, "b": {"optional": True}}}, {"b": True}, False),
        ({"keys": {"a": 1}}, {"a": 1, "c": 3}, False),
        ({"keys": {"a": 1}, "extra_keys": "allow"}, {"a": 1, "c": 3}, True),
        ({"keys": {"a": 1}}, [1], False),
        (
            {"items": {"keys": {"oldText": {"regex": ".*30.*"}, "newText": {"regex": ".*45.*"}}}},
            [{"oldText": "= 30;", "newText": "= 45;"}],
            True,
        ),
        (
            {"items": {"keys": {"oldText": {"regex": ".*30.*"}, "newText": {"regex": ".*45.*"}}}},
            [{"oldText": "= 30;", "newText": "= 45;", "note": "x"}],
            False,
        ),
    ],
)
def test_nested_matchers_judge_each_item_and_key(matcher: Any, value: Any, ok: bool) -> None:
    assert (check(m(matcher), value) is None) is ok


def test_a_reason_inside_an_argument_names_the_item_and_key() -> None:
    matcher = m({"items": {"keys": {"oldText": {"regex": ".*30.*"}}}})
    reason = check(matcher, [{"oldText": "30"}, {"oldText": "45"}])
    assert reason is not None and reason.startswith("[1].oldText: ")
    missing = check(m({"keys": {"a": 1}}), {})
    assert missing == ".a: missing"
    empty = check(m({"contains": "x"}), [])
    assert empty is not None and "empty" in empty


@pytest.mark.parametrize(
    ("value", "text", "ok"),
    [
        ("msg-1040", "msg-1040  Marco Rossi  Intro call", True),
        ("msg-104", "msg-1040  Marco Rossi  Intro call", False),
        ("Marco", "msg-1040  Marco Rossi  Intro call", True),
        ("arco", "msg-1040  Marco Rossi  Intro call", False),
        ("marco rossi", "msg-1040  Marco Rossi  Intro call", False),  # case matters
        ("/Documents/budget-q1-2026.md", "/Documents/budget-q1-2026.md\n/Documents/x.md", True),
        ("Documents/budget-q1-2026.md", "/Documents/budget-q1-2026.md", True),
        ("budget-q1-2026.md", "/Documents/budget-q1-2026.md", False),
        ("/Documents/budget", "/Documents/budget-q1-2026.md", False),
        ("~/Documents/budget-q1-2026.md", "found: /Documents/budget-q1-2026.md.", True),
        ("https://docs.kestrel.test/faq", "1. https://docs.kestrel.test/faq", True),
        ("https://docs.kestrel.test/fa", "1. https://docs.kestrel.test/faq", False),
        ("3.2", "Release notes for 3.2.0", False),
        ("Release notes for 3.2.0", "- Release notes for 3.2.0 (12 March)", True),
        (
            "Taberna do Mar, Rua de São Paulo 61",
            "at Taberna do Mar, Rua de São Paulo 61 – it",
            True,
        ),
        (
            "Taberna do Mar, Rua de São Paulo 6",
            "at Taberna do Mar, Rua de São Paulo 61 – it",
            False,
        ),
        ("dana.whitfield@tessera.dev", "Standup with dana.whitfield@tessera.dev, jonas", True),
        (30, "a 30-minute intro call", True),
        (30.0, "a 30-minute intro call", True),
        (3, "a 30-minute intro call", False),
        (118, "your payment of 118.00 EUR", True),
        ("30", "a 30-minute intro call", True),
        (12, "ticket DC26-08815", False),
        ("", "anything", False),
    ],
)
def test_a_chained_value_must_be_a_whole_value_of_a_text_result(
    value: Any, text: str, ok: bool
) -> None:
    assert found_in(value, text) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("n-12", True),
        ("n-1", False),
        ("Groceries", True),
        ("Grocer", False),
        (42, True),
        ("42", True),
        (4, False),
        ("webapp/src/session.js", True),
        ("notes", True),  # a key of an object is a value the result holds
        ("oat milk", True),
        # Inside a JSON string, the text rule holds (issue 18): a bounded run counts.
        ("oat", True),
        ("oa", False),
        ("milk", True),
    ],
)
def test_a_chained_value_must_be_a_whole_leaf_or_key_of_a_json_result(value: Any, ok: bool) -> None:
    text = (
        '{"notes": [{"id": "n-12", "title": "Groceries", "size": 42, '
        '"path": "/webapp/src/session.js", "first": "oat milk"}]}'
    )
    assert found_in(value, text) is ok


def test_every_earlier_call_of_the_source_step_is_looked_into() -> None:
    derived = m({"derived_from_step": 0})
    two = chain("no match here", "msg-1044  Northwind invoice", before=5)
    assert check(derived, "msg-1044", two) is None
    # A result that came after the call being judged was not there to take the value from.
    assert check(derived, "msg-1044", chain("nothing", "msg-1044", before=1)) is not None


def test_chained_values_work_inside_arrays_and_objects_and_as_numbers() -> None:
    source = chain("  10:00–11:30  Quarterly planning with dana@t.dev, jonas@t.dev  [evt-1011]")
    attendees = m({"items": {"derived_from_step": 0}, "contains": "dana@t.dev"})
    assert check(attendees, ["dana@t.dev", "jonas@t.dev"], source) is None
    assert check(attendees, ["dana@t.dev", "aiko@t.dev"], source) is not None
    nested = m({"keys": {"event": {"derived_from_step": 0}, "minutes": {"derived_from_step": 0}}})
    assert check(nested, {"event": "evt-1011", "minutes": 45}, source) is not None
    assert check(nested, {"event": "evt-1011", "minutes": 10}, source) is None
    assert check(nested, {"event": "evt-101", "minutes": 10}, source) is not None


def test_a_chained_value_that_is_neither_text_nor_a_number_is_refused() -> None:
    derived = m({"derived_from_step": 0})
    for value in (True, None, ["msg-1040"], {"id": "msg-1040"}, 10**400):
        assert check(derived, value, chain("msg-1040 true null")) is not None


def test_a_colon_separates_values_as_in_search_hits_and_labels() -> None:
    hits = "/Documents/travel/lisbon-itinerary.md:12: Wifi password: azulejo-2026"
    assert found_in("/Documents/travel/lisbon-itinerary.md", hits)
    assert found_in("azulejo-2026", hits)
    assert not found_in("azulejo-202", hits)
