"""The conversation's verdict from its turns', and the turns and step verdicts a trial's record keeps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_farm.schema import (
    Elicitation,
    Scenario,
    StepVerdict,
    StopReason,
    ToolCallRecord,
    TurnResult,
)
from mcp_farm.workers.grading.conversation.turn import grade_turn
from mcp_farm.workers.grading.conversation.views import credited_calls, plain_view
from mcp_farm.workers.grading.grade import Graded, grade, steps_of

NOT_GRADED = "not graded"
"""The detail of a turn the session has begun and not yet graded."""


def grade_conversation(
    scenario: Scenario,
    turns: list[TurnResult],
    calls: list[ToolCallRecord],
    stop_reason: StopReason,
    schemas: dict[str, dict[str, Any]],
    problem: str = "",
    destructive: frozenset[str] = frozenset(),
    elicited: Sequence[Elicitation] = (),
    read_only: frozenset[str] = frozenset(),
) -> tuple[list[TurnResult], Graded]:
    """Every turn graded on its own (in order: a later turn may chain from an earlier one),
    and the conversation's verdict: a pass only if every turn of the scenario passed."""
    graded: list[TurnResult] = []
    for i, turn in enumerate(turns):
        # A turn graded before keeps what ended it in its detail; one the session was cut off
        # in (never graded) ended as the trial did.
        why = problem if turn.detail == NOT_GRADED else turn.detail
        verdict = grade_turn(
            scenario, i, turn, graded, calls, schemas, why, destructive, elicited, read_only
        )
        graded.append(
            turn.model_copy(
                update={
                    "outcome": verdict.outcome,
                    "detail": verdict.detail,
                    "first_try": verdict.first_try if verdict.outcome == "pass" else None,
                    "route": verdict.route,
                    "steps": steps_of(
                        plain_view(scenario, i),
                        credited_calls(scenario, i, turn, calls, schemas),
                        verdict.route,
                        schemas,
                    ),
                }
            )
        )
    whole = len(scenario.dialogue())
    failed = [t for t in graded if t.outcome != "pass"]
    if failed:
        first = failed[0]
        detail = _named(first.index, first.detail, whole)
        for t in (t for t in graded if t.farm_problem):
            detail += f"; not continued after turn {t.index + 1}: {t.farm_problem}"
        return graded, Graded(first.outcome, detail, route=_route(first, whole))
    if len(graded) < max(whole, 1):
        # The session ended before a turn began (setup failed, the clock ran out, no user
        # model could be made): graded as a session that ended with no call and no answer.
        i = len(graded)
        view = plain_view(scenario, i) if whole else scenario
        early = grade(view, [], None, stop_reason, schemas, problem)
        route = early.route if whole == 1 else None
        return graded, Graded(early.outcome, _named(i, early.detail, whole), route=route)
    if whole == 1:
        # A conversation of one turn (a one-prompt scenario) passes as its turn did.
        one = graded[0]
        return graded, Graded("pass", one.detail, bool(one.first_try), route=one.route)
    return graded, Graded("pass", "", first_try=all(t.first_try for t in graded))


def _named(i: int, detail: str, whole: int) -> str:
    """A turn's detail as the trial's: with the turn named where there is more than one."""
    return f"turn {i + 1}: {detail}" if whole > 1 else detail


def _route(turn: TurnResult, whole: int) -> str | None:
    """The trial's route: its one turn's; a conversation of several turns has none of its own."""
    return turn.route if whole == 1 else None


def stored_turns(
    scenario: Scenario,
    stored: list[TurnResult],
    calls: list[ToolCallRecord],
    answer: str | None,
    stop_reason: StopReason,
) -> list[TurnResult]:
    """A recorded trial's turns, to grade again: as stored; a one-prompt trial's record keeps
    no turn list (`recorded_turns`), so its one turn is made again from the trial's calls
    and answer, not yet graded (its detail, `NOT_GRADED`, lets the trial's own be used)."""
    if scenario.turns or scenario.prompt is None or stored:
        return stored
    return [
        TurnResult(
            index=0,
            user=scenario.prompt,
            first_call=0,
            call_count=len(calls),
            answer=answer,
            stop_reason=stop_reason,
            outcome="harness_error",
            detail=NOT_GRADED,
        )
    ]


def recorded_turns(scenario: Scenario, turns: list[TurnResult]) -> list[TurnResult]:
    """The turns a trial's record keeps, as records always kept them (the reports count a
    trial with a turn list as a conversation): a conversation's; none for a one-prompt
    scenario, whose step verdicts the record keeps at the trial's level (`trial_steps`)."""
    return turns if scenario.turns else []


def trial_steps(
    scenario: Scenario,
    turns: list[TurnResult],
    calls: list[ToolCallRecord],
    route: str | None,
    schemas: dict[str, dict[str, Any]],
) -> list[StepVerdict]:
    """The step verdicts a record keeps at the trial's level: none for a conversation (each
    turn keeps its own), a one-prompt scenario's one turn's, and for a simulated user's trial
    (or a session that ended before its turn began) the scenario's steps over all its calls."""
    if scenario.turns:
        return []
    if turns:
        return turns[0].steps
    view = plain_view(scenario, 0) if scenario.dialogue() else scenario
    return steps_of(view, calls, route, schemas)
