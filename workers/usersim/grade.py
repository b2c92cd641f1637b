"""Grading a conversation with a simulated user, on outcomes: the calls of the whole
conversation by the one-prompt grader (steps, order, `never`, call measures), then the
servers' final state, then the `must_ask` milestones; whether the user left early; and whose
mistake a failure was."""

from __future__ import annotations

import re
from typing import Any

from mcp_farm.schema import (
    UNGRADED,
    FailureSource,
    Message,
    Scenario,
    StopReason,
    ToolCallRecord,
    UserError,
    UserSimRecord,
    budgeted_search,
)
from mcp_farm.workers.grading.grade import Graded, grade, steps_of
from mcp_farm.workers.usersim.script import EMPTY


def _found(pattern: str, text: str, field: str) -> bool:
    return budgeted_search(pattern, text, field=field, flags=re.IGNORECASE) is not None


def state_problem(scenario: Scenario, record: UserSimRecord) -> str | None:
    """The first `final_state` check its read call's result does not meet."""
    for check, call in zip(scenario.final_state, record.state_calls, strict=False):
        text = call.whole_result or call.error or ""
        if check.matches is not None and not _found(check.matches, text, "final_state"):
            return f"final state: {check.label} does not show /{check.matches}/"
        if check.lacks is not None and _found(check.lacks, text, "final_state"):
            return f"final state: {check.label} still shows /{check.lacks}/"
    if len(record.state_calls) < len(scenario.final_state):
        return "final state: not read (the conversation ended before it could be)"
    return None


def agent_replies(transcript: list[Message]) -> list[str]:
    """What the agent said to the user: its replies without tool calls."""
    return [
        m.content
        for m in transcript
        if m.role == "assistant" and not m.tool_calls and not m.undecoded and m.content
    ]


def milestone_problem(scenario: Scenario, transcript: list[Message]) -> str | None:
    """The first `must_ask` milestone no reply of the agent (holding a question) matches."""
    asked = [r for r in agent_replies(transcript) if "?" in r]
    for pattern in scenario.must_ask:
        if not any(_found(pattern, reply, "must_ask") for reply in asked):
            return f"the agent never asked about /{pattern}/"
    return None


def grade_simulated(
    scenario: Scenario,
    record: UserSimRecord,
    calls: list[ToolCallRecord],
    final_answer: str | None,
    transcript: list[Message],
    stop_reason: StopReason,
    schemas: dict[str, dict[str, Any]],
    problem: str = "",
) -> Graded:
    """The conversation's verdict: its calls as one request's, then its outcomes."""
    graded = grade(scenario, calls, final_answer, stop_reason, schemas, problem)
    if graded.outcome != "pass":
        return graded
    missed = state_problem(scenario, record) or milestone_problem(scenario, transcript)
    if missed:
        return Graded("output_mismatch", missed, route=graded.route)
    return graded


def _first_wrong_call(
    scenario: Scenario, calls: list[ToolCallRecord], route: str | None, schemas: dict[str, Any]
) -> int | None:
    """The index of the agent's first call that did no step (nor was an allowed extra, or
    a call that failed), where one exists."""
    doers = {i for v in steps_of(scenario, calls, route, schemas) for i in v.met_by}
    extra = set(scenario.allowed_extra)
    for c in calls:
        if c.index not in doers and (c.tool not in extra or not c.ok):
            return c.index
    return None


def left_early(
    scenario: Scenario,
    graded: Graded,
    record: UserSimRecord,
    calls: list[ToolCallRecord],
    transcript: list[Message],
    schemas: dict[str, Any],
) -> UserError | None:
    """The user's stop as a user error (`left_early`): it answered a reply of the agent that
    holds a question, and the outcome it came for was not reached (a step of the scenario
    done by no call, or a `final_state` check not met). The stop ends the conversation, so
    the conversation's calls are those made by then, and the final state read after it is
    the state at that moment: both can be graded again from the stored trial."""
    if record.ended != "user_stop" or graded.outcome == "pass" or graded.outcome in UNGRADED:
        return None
    replies = agent_replies(transcript)
    if not replies or "?" not in replies[-1]:
        return None
    steps = steps_of(scenario, calls, graded.route, schemas)
    if all(v.call is not None for v in steps) and state_problem(scenario, record) is None:
        return None
    # A parting message is the transcript's last; a bare stop marker left none.
    parting = transcript[-1].content if transcript[-1].role == "user" else ""
    return UserError(message=record.messages, kind="left_early", facts=[], said=parting)


def judge_stop(
    scenario: Scenario,
    graded: Graded,
    record: UserSimRecord,
    calls: list[ToolCallRecord],
    transcript: list[Message],
    schemas: dict[str, Any],
) -> None:
    """Record the user's stop as `left_early` where it was one (above), judged once: an empty
    message that ended the conversation at the agent's question is that stop, so its
    `off_script` "(empty message)" error gives way to the `left_early` one."""
    left = left_early(scenario, graded, record, calls, transcript, schemas)
    if left is None:
        return
    same = UserError(message=left.message, kind="off_script", facts=[EMPTY], said="")
    record.errors = [e for e in record.errors if e != same] + [left]


def failure_source(
    scenario: Scenario,
    graded: Graded,
    record: UserSimRecord,
    calls: list[ToolCallRecord],
    schemas: dict[str, Any],
) -> FailureSource:
    """`none` for a pass (or an ungraded trial); else `user` when the agent made no wrong call
    and the user left early, or when an invented or volunteered fact came in a message sent
    before the agent's first failing point; `agent` otherwise. The failing point is the user
    message the agent's first wrong call answered; with no wrong call (a step or an outcome
    missing), the end of the conversation."""
    if graded.outcome == "pass" or graded.outcome in UNGRADED:
        return "none"
    wrong = _first_wrong_call(scenario, calls, graded.route, schemas)
    if wrong is None:
        if any(e.kind == "left_early" for e in record.errors):
            return "user"
        point = record.messages - 1
    else:
        point = max((i for i, first in enumerate(record.first_calls) if first <= wrong), default=0)
    slips = [e for e in record.errors if e.kind != "left_early"]
    return "user" if any(e.message <= point for e in slips) else "agent"
