"""One call per step under `calls: strict`, repeats a task needs, and which step or route
takes the blame when steps share a tool."""

from __future__ import annotations

from typing import Any

from mcp_farm.schema import (
    Scenario,
    ToolCallRecord,
)
from mcp_farm.workers.grading.counting import repeats_allowed
from mcp_farm.workers.grading.grade import (
    Graded,
    grade,
)

SCHEMAS: dict[str, dict[str, Any]] = {
    name: {"type": "object", "properties": {"q": {}, "id": {}, "path": {}, "unit": {}, "to": {}}}
    for name in ("convert", "search", "delete", "list", "move", "read", "query", "lookup")
}


def scenario(*steps: dict[str, Any], **fields: Any) -> Scenario:
    return Scenario.model_validate(
        {"id": "t", "version": 1, "tier": "simple", "prompt": "p", "servers": ["s"]}
        | {"expect": list(steps)}
        | fields
    )


def call(i: int, tool: str, result: str = "", ok: bool = True, **arguments: Any) -> ToolCallRecord:
    return ToolCallRecord(
        index=i,
        server="s",
        tool=tool,
        arguments=arguments,
        ok=ok,
        error=None if ok else result,
        result_text=result,
    )


def graded(s: Scenario, calls: list[ToolCallRecord], stop: str = "answer") -> Graded:
    return grade(s, calls, "done", stop, SCHEMAS)  # type: ignore[arg-type]


def strict(s: Scenario) -> Scenario:
    return s.model_copy(update={"calls": "strict"})


CONVERT = scenario({"tool": "convert", "params": {"unit": {"one_of": ["in", "inches"]}}})
SEARCH = scenario({"tool": "search", "params": {"q": {"regex": ".*heron.*"}}})


def test_a_second_call_that_also_fits_a_done_step_is_wrong_params_under_strict() -> None:
    for s, calls in (
        (CONVERT, [call(0, "convert", unit="inches"), call(1, "convert", unit="in")]),
        (SEARCH, [call(0, "search", q="grey heron"), call(1, "search", q="heron nest")]),
    ):
        lenient = graded(s, calls)
        assert (lenient.outcome, lenient.first_try) == ("pass", False)
        v = graded(strict(s), calls)
        assert v.outcome == "wrong_params", v.detail
        assert "calls: strict: call 1" in v.detail
        assert "does step 0 again, done by call 0" in v.detail


def test_a_call_that_fits_a_done_step_is_not_a_first_try_even_among_other_steps() -> None:
    s = scenario(
        {"tool": "search", "params": {"q": {"regex": ".*heron.*"}}},
        {"tool": "delete", "params": {"id": "n-1"}},
    )
    calls = [
        call(0, "search", "n-1", q="heron"),
        call(1, "delete", id="n-1"),
        call(2, "search", "", q="herons"),
    ]
    assert (graded(s, calls).outcome, graded(s, calls).first_try) == ("pass", False)
    v = graded(strict(s), calls)
    assert v.outcome == "wrong_params" and "call 2 (search) does step 0 again" in v.detail
    assert graded(strict(s), calls[:2]).first_try


# Look, move, look again: the same call twice, each doing a step of its own.
LOOK_MOVE_LOOK = scenario(
    {"tool": "list", "params": {"path": "Desktop"}},
    {"tool": "move", "params": {"path": "Desktop/a.pdf", "to": "Documents/a.pdf"}},
    {"tool": "list", "params": {"path": "Desktop"}},
    calls="strict",
)
LOOKED = call(0, "list", "a.pdf", path="Desktop")
MOVED = call(1, "move", "moved", path="Desktop/a.pdf", to="Documents/a.pdf")
LOOKED_AGAIN = call(2, "list", "", path="Desktop")


def test_strict_lets_a_task_make_the_same_call_as_often_as_its_steps_need_it() -> None:
    v = graded(LOOK_MOVE_LOOK, [LOOKED, MOVED, LOOKED_AGAIN])
    assert (v.outcome, v.first_try) == ("pass", True), v.detail
    # A third look does no step of its own: a loop, however many repeats the scenario allows.
    third = call(3, "list", "", path="Desktop")
    roomy = LOOK_MOVE_LOOK.model_copy(update={"max_repeats": 5})
    v = graded(roomy, [LOOKED, MOVED, LOOKED_AGAIN, third])
    assert v.outcome == "tool_loop" and "call 3 (list) repeats call 0" in v.detail


def test_strict_still_holds_the_scenarios_max_repeats() -> None:
    capped = LOOK_MOVE_LOOK.model_copy(update={"max_repeats": 1})
    v = graded(capped, [LOOKED, MOVED, LOOKED_AGAIN])
    assert v.outcome == "tool_loop" and "2 times" in v.detail


def test_the_session_stops_a_strict_trial_only_past_what_its_steps_could_use() -> None:
    assert repeats_allowed(LOOK_MOVE_LOOK, "list") == 2
    assert repeats_allowed(LOOK_MOVE_LOOK, "move") == 1
    assert repeats_allowed(LOOK_MOVE_LOOK, "other") == 1
    assert repeats_allowed(LOOK_MOVE_LOOK.model_copy(update={"calls": "lenient"}), "move") == 2
    assert repeats_allowed(LOOK_MOVE_LOOK.model_copy(update={"max_repeats": 1}), "list") == 1


def test_an_exact_repeat_of_a_step_that_is_not_the_last_is_a_tool_loop_under_strict() -> None:
    s = scenario(
        {"tool": "search", "params": {"q": "heron"}},
        {"tool": "delete", "params": {"id": "n-1"}},
        calls="strict",
    )
    searched = call(0, "search", "n-1", q="heron")
    again = call(1, "search", "n-1", q="heron")
    # Stopped by the session at the repeat (one search is all the steps can use) ...
    v = graded(s, [searched, again], stop="tool_loop")
    assert v.outcome == "tool_loop", v.detail
    assert "call 1 (search) repeats call 0" in v.detail
    # ... or going on to the next step: a loop either way.
    assert graded(s, [searched, again, call(2, "delete", id="n-1")]).outcome == "tool_loop"
    # Lenient counting allows the repeat; the missing step is then what is wrong.
    lenient = s.model_copy(update={"calls": "lenient"})
    assert graded(lenient, [searched, again]).outcome == "wrong_sequence"


def test_a_repeat_of_the_step_two_steps_share_a_tool_with_is_a_loop_not_an_attempt() -> None:
    s = scenario(
        {"tool": "read", "params": {"path": "a.md"}},
        {"tool": "read", "params": {"path": "b.md"}},
        calls="strict",
    )
    v = graded(s, [call(0, "read", "x", path="a.md"), call(1, "read", "x", path="a.md")])
    assert v.outcome == "tool_loop", v.detail


def test_a_missing_later_step_of_the_same_tool_is_a_missing_step() -> None:
    s = scenario(
        {"tool": "read", "params": {"path": "a.md"}},
        {"tool": "read", "params": {"path": "b.md"}},
    )
    v = graded(s, [call(0, "read", "x", path="a.md")])
    assert v.outcome == "wrong_sequence", v.detail
    assert "step 1 (read) never called" in v.detail
    # A call left over once the other steps have theirs is this step's attempt.
    loose = scenario(
        {"tool": "read", "params": {"path": {"regex": ".*\\.md"}}},
        {"tool": "read", "params": {"path": "b.md"}},
    )
    v = graded(loose, [call(0, "read", "x", path="a.md"), call(1, "read", "x", path="c.md")])
    assert v.outcome == "wrong_params" and "c.md" in v.detail and "a.md" not in v.detail
    assert graded(loose, [call(0, "read", "x", path="a.md")]).outcome == "wrong_sequence"


# One JOIN query, or the id first and then the orders.
JOIN_OR_LOOKUPS = Scenario.model_validate(
    {
        "id": "t",
        "version": 1,
        "tier": "moderate",
        "prompt": "p",
        "servers": ["s"],
        "routes": [
            {"name": "join", "expect": [{"tool": "query", "params": {"q": {"regex": ".*join.*"}}}]},
            {
                "name": "lookups",
                "expect": [
                    {"tool": "query", "params": {"q": {"regex": ".*from customers.*"}}},
                    {"tool": "query", "params": {"q": {"regex": ".*from orders.*"}}},
                ],
            },
        ],
    }
)


def test_a_route_left_half_done_is_named_and_graded_as_a_missing_step() -> None:
    looked_up = call(0, "query", '[{"id": 3}]', q="select id from customers")
    v = graded(JOIN_OR_LOOKUPS, [looked_up])
    assert (v.outcome, v.route) == ("wrong_sequence", "lookups"), v.detail
    assert "step 1 (query) never called" in v.detail


def test_on_a_tie_the_route_with_more_steps_done_takes_the_blame() -> None:
    s = Scenario.model_validate(
        {
            "id": "t",
            "version": 1,
            "tier": "moderate",
            "prompt": "p",
            "servers": ["s"],
            "routes": [
                {"name": "direct", "expect": [{"tool": "delete", "params": {"id": "n-1"}}]},
                {
                    "name": "look-first",
                    "expect": [
                        {"tool": "search", "params": {"q": "heron"}},
                        {"tool": "delete", "params": {"id": "n-1"}},
                    ],
                },
            ],
            "allowed_extra": ["search"],
        }
    )
    calls = [call(0, "search", "n-1", q="heron"), call(1, "delete", id="n-2")]
    v = graded(s, calls)
    assert (v.outcome, v.route) == ("wrong_params", "look-first"), v.detail


def test_a_chained_step_made_before_its_source_step_is_a_wrong_sequence() -> None:
    s = scenario(
        {"tool": "search", "params": {"q": "heron"}},
        {"tool": "delete", "params": {"id": {"derived_from_step": 0, "from_key": "id"}}},
    )
    # The delete went first, so the search no longer finds the note it removed.
    early = [call(0, "delete", "deleted", id="n-7"), call(1, "search", "[]", q="heron")]
    v = graded(s, early)
    assert v.outcome == "wrong_sequence", v.detail
    assert "step 1 (delete) was called before step 0 (search)" in v.detail
    # Or the search, made after the delete, failed for want of anything to find.
    failed = [early[0], call(1, "search", "no notes match", ok=False, q="heron")]
    v = graded(s, failed)
    assert v.outcome == "wrong_sequence", v.detail
    assert "was called before step 0 (search)" in v.detail
    # Made after the search, a value the search did not give is still a wrong value.
    late = [call(0, "search", '[{"id": "n-7"}]', q="heron"), call(1, "delete", id="n-8")]
    assert graded(s, late).outcome == "wrong_params"
    # Before the search and wrong in an argument that needs no result: wrong_params.
    both = scenario(
        {"tool": "search", "params": {"q": "heron"}},
        {
            "tool": "delete",
            "params": {"id": {"derived_from_step": 0}, "path": "notes"},
        },
    )
    bad = [call(0, "delete", "deleted", id="n-7", path="x"), call(1, "search", "[]", q="heron")]
    assert graded(both, bad).outcome == "wrong_params"
