"""Verdicts by state that blame the right party and say where: `other_path` only where the
model had another path (not where the farm set a turn back or made calls, not where a turn
diverged, not where nothing could change the state), and a `wrong_state` detail that names the
first JSON paths where expected and found differ, with both values, short."""

from __future__ import annotations

import json

import pytest

from mcp_farm.schema import Scenario, StateProbe, ToolCallRecord, TurnResult
from mcp_farm.workers.state import ABSENT, combined, differences, graded_by_state, judged

PROBE = StateProbe.model_validate(
    {"snapshot": True, "at": "bookings", "expect": ["Attic"], "label": "one booking"}
)
SCENARIO = Scenario.model_validate(
    {
        "id": "s.book",
        "version": 1,
        "tier": "simple",
        "prompt": "Book the Attic.",
        "servers": ["office"],
        "expect": [{"tool": "book_room", "params": {"room": "Attic"}}],
        "state": [PROBE.model_dump(exclude_defaults=True)],
    }
)


def _call(tool: str) -> ToolCallRecord:
    return ToolCallRecord(index=0, server="office", tool=tool, arguments={}, ok=True)


def _turn(**update: object) -> TurnResult:
    turn = TurnResult(
        index=0, user="Book the Attic.", first_call=0, stop_reason="answer", outcome="wrong_tool"
    )
    return turn.model_copy(update=update)


def _other_path(turn: TurnResult, calls: list[ToolCallRecord], read_only: set[str]) -> bool:
    fits = judged(PROBE, {"bookings": ["Attic"]}, None)
    _t, _o, _d, verdict = graded_by_state(
        SCENARIO, [turn], "wrong_tool", "no", [fits], calls, frozenset(read_only)
    )
    assert verdict is not None
    return verdict.other_path


def test_a_write_by_another_tool_that_reaches_the_state_is_another_path() -> None:
    assert _other_path(_turn(), [_call("reserve_room")], {"list_rooms"})


@pytest.mark.parametrize(
    "update",
    [
        {"restored": True},
        {"diverged": True, "diverged_by": "model"},
        {"farm_calls": [_call("book_room")]},
    ],
)
def test_no_other_path_where_the_farm_had_a_hand_in_the_state(update: dict[str, object]) -> None:
    assert not _other_path(_turn(**update), [_call("reserve_room")], set())


def test_no_other_path_on_a_trial_whose_calls_could_change_nothing() -> None:
    # The model only read (or made no call): a probe that fits says nothing changed.
    assert not _other_path(_turn(), [_call("list_rooms")], {"list_rooms"})
    assert not _other_path(_turn(), [], set())
    # A read-only scenario: every expected tool is marked read-only.
    assert not _other_path(_turn(), [_call("reserve_room")], {"book_room"})


def test_the_diverged_turns_say_whose_doing_they_were() -> None:
    fits = judged(PROBE, {"bookings": ["Attic"]}, 1)
    turns = [_turn(), _turn(index=1, diverged=True, diverged_by="farm")]
    _t, _o, _d, verdict = graded_by_state(SCENARIO, turns, "wrong_tool", "", [fits])
    assert verdict is not None and verdict.diverged == [1]
    assert verdict.diverged_by == {1: "farm"}
    assert not verdict.other_path


def test_wrong_state_names_the_first_paths_that_differ_with_both_values_short() -> None:
    expected = {
        "groceries": {"body": "- lentils\n" * 40 + "- oat milk", "tags": ["food"], "count": 6},
        "reading": {"body": "x" * 900},
    }
    found = json.loads(json.dumps(expected))
    found["groceries"]["body"] += "\n- oat milk"
    found["groceries"]["count"] = 7
    found["groceries"]["tags"].append("weekly")
    probe = StateProbe.model_validate(
        {"snapshot": True, "at": "notes", "expect": {"exact": expected}, "label": "notes"}
    )
    outcome, detail, verdict = combined("both", "pass", "", [judged(probe, {"notes": found}, 0)])
    assert outcome == "wrong_state"
    assert "at notes.groceries.body: expected" in detail
    assert "- oat milk\\n- oat milk" in detail  # where the strings differ, not their start
    assert 'at notes.groceries.tags[1]: expected (absent), found "weekly"' in detail
    assert "at notes.groceries.count: expected 6, found 7" in detail
    assert "x" * 100 not in detail and len(detail) < 400
    # The whole values stay in the probe's result (the trial page).
    assert verdict is not None and json.loads(verdict.probes[0].found) == {"notes": found}


def test_differences_walk_keys_and_items_in_order_and_numbers_by_value() -> None:
    assert differences({"a": 1, "b": [1, 2]}, {"a": 1.0, "b": [1, 2]}) == []
    assert differences({"a": [1, 2]}, {"a": [1], "c": True}, "x") == [
        ("x.a[1]", 2, ABSENT),
        ("x.c", ABSENT, True),
    ]
    assert differences({"a.b": 1}, {"a.b": 2}) == [('["a.b"]', 1, 2)]


def test_the_trial_page_says_whose_doing_a_diverged_turn_was() -> None:
    from types import SimpleNamespace

    from mcp_farm.scheduler.view.transcript import state_summary

    fits = judged(PROBE, {"bookings": ["Attic"]}, None)
    turns = [_turn(), _turn(index=1, diverged=True, diverged_by="model")]
    _t, _o, _d, verdict = graded_by_state(SCENARIO, turns, "wrong_tool", "", [fits])
    assert verdict is not None
    line, _rows = state_summary(SimpleNamespace(state_json=verdict.model_dump_json()))
    assert "started diverged: turns 2 (the model's calls stayed)" in line
