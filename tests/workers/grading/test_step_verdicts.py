"""Which call did which step: the step verdicts kept with a trial for the explorer."""

from __future__ import annotations

from typing import Any

from mcp_farm.schema import Scenario, TurnResult
from mcp_farm.workers.grading.conversation import grade_conversation
from mcp_farm.workers.grading.grade import grade, steps_of
from tests.workers.grading.test_step_order import FORK, HITS, SCHEMAS, call, scenario


def _steps(s: Scenario, calls: list[Any], route: str | None = None) -> list[tuple[Any, ...]]:
    return [(v.step, v.call, v.met_by, v.problem) for v in steps_of(s, calls, route, SCHEMAS)]


def test_each_step_names_the_call_that_did_it() -> None:
    calls = [call(0, "search", HITS, q="x"), call(1, "read", id="b-2"), call(2, "read", id="a-1")]
    assert grade(FORK, calls, "done", "answer", SCHEMAS).outcome == "pass"
    found = _steps(FORK, calls)
    assert [s[0] for s in found] == [0, 1, 2]
    assert found[0][1] == 0 and not found[0][3]
    # Both reads meet both read steps; the placement gives each step a call of its own.
    assert {found[1][1], found[2][1]} == {1, 2}
    assert found[1][2] == [1, 2] and found[2][2] == [1, 2]


def test_a_step_no_call_did_says_why_and_which_call_was_tried() -> None:
    calls = [call(0, "search", HITS, q="x"), call(1, "read", id="zz-9")]
    found = _steps(FORK, calls)
    assert found[0][1] == 0
    step, did, met, problem = found[1]
    assert step == 1
    assert did is None and met == []
    assert problem.startswith("call 1: read.id: ")
    assert found[2][1] is None and found[2][3]


def test_a_step_never_called_says_so() -> None:
    s = scenario({"tool": "search", "params": {"q": "x"}}, {"tool": "write"})
    found = _steps(s, [call(0, "search", q="x")])
    assert found[1] == (1, None, [], "step 1 (write) never called")


def test_a_route_scenario_shows_the_steps_of_the_route_graded() -> None:
    routed = Scenario.model_validate(
        {
            "id": "t",
            "version": 1,
            "tier": "simple",
            "prompt": "p",
            "servers": ["s"],
            "routes": [
                {"name": "by-search", "expect": [{"tool": "search"}, {"tool": "read"}]},
                {"name": "by-list", "expect": [{"tool": "list"}]},
            ],
        }
    )
    calls = [call(0, "list")]
    verdict = grade(routed, calls, "done", "answer", SCHEMAS)
    assert verdict.route == "by-list"
    assert _steps(routed, calls, verdict.route) == [(0, 0, [0], "")]


def test_open_tool_use_and_a_turn_that_expects_nothing_have_no_steps() -> None:
    assert steps_of(scenario(), [call(0, "list")], None, SCHEMAS) == []


def test_each_turn_of_a_conversation_keeps_its_own_steps() -> None:
    convo = Scenario.model_validate(
        {
            "id": "c",
            "version": 1,
            "tier": "simple",
            "servers": ["s"],
            "turns": [
                {"user": "find x", "expect": [{"tool": "search", "params": {"q": "x"}}]},
                {"user": "now read it", "expect": [{"tool": "read", "params": {"id": "a-1"}}]},
            ],
        }
    )
    calls = [call(0, "search", HITS, q="x"), call(1, "read", id="b-2")]
    turns = [
        TurnResult(
            index=0,
            user="find x",
            first_call=0,
            call_count=1,
            stop_reason="answer",
            outcome="pass",
            answer="found",
        ),
        TurnResult(
            index=1,
            user="now read it",
            first_call=1,
            call_count=1,
            stop_reason="answer",
            outcome="pass",
            answer="read",
        ),
    ]
    graded, verdict = grade_conversation(convo, turns, calls, "answer", SCHEMAS)
    assert verdict.outcome == "wrong_params"
    assert [(v.step, v.call) for v in graded[0].steps] == [(0, 0)]
    second = graded[1].steps
    assert [(v.step, v.call) for v in second] == [(0, None)]
    assert second[0].problem.startswith("call 1: read.id: ")
