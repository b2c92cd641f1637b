"""The HTML report's transcript drill-down shows each conversation turn's own verdict and the
tools that changed in it, before the turn's user message, escaped like everything a model or
server wrote."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from mcp_farm.scheduler.report.html.page import _transcript

PAYLOAD = "<script>alert(1)</script>"


def _trial(turns: list[dict[str, Any]], users: int = 3) -> SimpleNamespace:
    """A stored trial whose transcript opens with a few-shot example (a user message that is
    no turn's), then one user message per turn, each answered."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You have tools."},
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "4"},
    ]
    for k in range(users - 1):
        messages += [
            {"role": "user", "content": f"request {k + 1}"},
            {"role": "assistant", "content": f"reply {k + 1}"},
        ]
    return SimpleNamespace(
        transcript_json=json.dumps(messages),
        setup_json="[]",
        elicitations_json="[]",
        turns_json=json.dumps(turns),
    )


def _turn(index: int, outcome: str, **more: Any) -> dict[str, Any]:
    return {"index": index, "outcome": outcome, "user": "u", "first_call": 0} | more


TURNS = [
    _turn(0, "pass"),
    _turn(
        1,
        "wrong_tool",
        detail=f"called archive_task {PAYLOAD}",
        tools_added=["assign_task", "export_tasks"],
        tools_removed=["export_tasks_csv"],
    ),
]


def test_each_turns_verdict_and_tool_change_come_before_its_user_message() -> None:
    shown = _transcript(_trial(TURNS))
    first, second = shown.index("turn 1: pass"), shown.index("turn 2: wrong_tool")
    assert shown.index("[user] What is 2 + 2?") < first < shown.index("[user] request 1")
    assert shown.index("[assistant] reply 1") < second < shown.index("[user] request 2")
    assert (
        "turn 2: wrong_tool (called archive_task &lt;script&gt;alert(1)&lt;/script&gt;)"
        " · tools +assign_task +export_tasks −export_tasks_csv"
    ) in shown
    assert PAYLOAD not in shown
    assert "turn 1: pass\n" in shown  # no detail, no tool change: nothing after the outcome


def test_a_turn_the_farm_could_not_continue_from_says_why() -> None:
    turns = [_turn(0, "wrong_params", farm_problem="the farm's call of step 0 failed")]
    shown = _transcript(_trial(turns, users=2))
    assert "turn 1: wrong_params · not continued: the farm&#x27;s call of step 0 failed" in shown


def test_a_one_prompt_trial_shows_no_turn_lines() -> None:
    shown = _transcript(_trial([]))
    assert "turn " not in shown


def test_turns_with_no_user_message_left_to_go_before_are_shown_first() -> None:
    shown = _transcript(_trial(TURNS, users=1))
    assert shown.startswith("turn 1: pass")
    assert shown.count("turn 2: wrong_tool") == 1
    assert shown.index("turn 2: wrong_tool") < shown.index("[system]")
