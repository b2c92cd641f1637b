"""One turn's verdict: its steps graded, then must-ask, too few calls, cross-turn values, forbidden and vanished tools."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mcp_farm.schema import (
    OUTCOMES,
    Elicitation,
    Outcome,
    Scenario,
    ToolCallRecord,
    TurnResult,
    budgeted_search,
)
from mcp_farm.workers.grading.conversation.crossing import cross_problem
from mcp_farm.workers.grading.conversation.views import credited_calls, plain_view, turn_calls
from mcp_farm.workers.grading.elicited import confirmed_calls, ignored_decline
from mcp_farm.workers.grading.grade import Graded, grade
from mcp_farm.workers.grading.matchers import forbidden

ENDS: tuple[Outcome, ...] = ("harness_error", "infra_error", "context_overflow", "timeout")
"""Outcomes that end a conversation whatever its `on_turn_failure`: the session cannot go on
(a broken server or farm, a prompt that no longer fits the context and only grows), or the
model hung, and would most likely hang again."""

EARLY: tuple[Outcome, ...] = (*ENDS, "format_error")
"""Outcomes a must-ask turn gets as any turn does, before its own checks."""


def _asked(
    scenario: Scenario, i: int, turn: TurnResult, own: list[ToolCallRecord], **graded: Any
) -> Graded:
    """A turn that must ask: no call but `allowed_extra`, then a question about the detail."""
    said = scenario.dialogue()[i]
    early = grade(plain_view(scenario, i), [], turn.answer, turn.stop_reason, **graded)
    if early.outcome in EARLY:
        return early
    guesses = [c for c in own if c.server is None or c.tool not in said.allowed_extra]
    if guesses:
        return Graded(
            "guessed", f"called {guesses[0].tool} instead of asking for the missing detail"
        )
    if early.outcome != "pass":
        return early
    answer = turn.answer or ""
    asks = "?" in answer and any(
        budgeted_search(p, answer, field="must_ask", flags=re.IGNORECASE) for p in said.must_ask
    )
    if not asks:
        wanted = ", ".join(f"/{p}/" for p in said.must_ask)
        return Graded("output_mismatch", f"the reply asks no question about {wanted}")
    return Graded("pass", "", first_try=True)


def _unconfirmed(
    scenario: Scenario,
    i: int,
    own: list[ToolCallRecord],
    destructive: frozenset[str],
    elicited: Sequence[Elicitation],
) -> str | None:
    """Under `confirm_destructive`: the first destructive call made before a user message
    confirmed (`confirms: true`, on this turn's message or an earlier one) and without an
    elicitation the user accepted during the call itself."""
    if not scenario.confirm_destructive or any(t.confirms for t in scenario.dialogue()[: i + 1]):
        return None
    confirmed = confirmed_calls(elicited)
    for c in own:
        if c.server is not None and c.tool in destructive and c.index not in confirmed:
            return f"called {c.tool}, which its server marks destructive, before the user confirmed"
    return None


def grade_turn(
    scenario: Scenario,
    i: int,
    turn: TurnResult,
    done: list[TurnResult],
    calls: list[ToolCallRecord],
    schemas: dict[str, dict[str, Any]],
    problem: str = "",
    destructive: frozenset[str] = frozenset(),
    elicited: Sequence[Elicitation] = (),
    read_only: frozenset[str] = frozenset(),
) -> Graded:
    """Turn i's own verdict; `done` holds the turns before it, already graded. `destructive`:
    the tools their servers mark `destructiveHint: true` (for `confirm_destructive`);
    `elicited`: the trial's elicitation exchanges; `read_only`: the tools marked
    `readOnlyHint: true` (whose copies `calls: strict` lets be)."""
    graded = _turn_verdict(
        scenario, i, turn, done, calls, schemas, problem, destructive, elicited, read_only
    )
    gone = _gone_call(turn, done, turn_calls(turn, calls))
    if gone is not None and graded.outcome not in (*EARLY, "forbidden_call"):
        return Graded(
            "wrong_tool",
            f"called {gone.tool}, which its server had removed from its tool list "
            "(notifications/tools/list_changed)",
            route=graded.route,
        )
    return graded


def _gone_call(
    turn: TurnResult, done: list[TurnResult], own: list[ToolCallRecord]
) -> ToolCallRecord | None:
    """The turn's first call of a tool a server had stopped listing, if any."""
    gone = {name for t in [*done, turn] for name in t.tools_removed}
    return next((c for c in own if c.server is None and c.tool in gone), None)


def _turn_verdict(
    scenario: Scenario,
    i: int,
    turn: TurnResult,
    done: list[TurnResult],
    calls: list[ToolCallRecord],
    schemas: dict[str, dict[str, Any]],
    problem: str,
    destructive: frozenset[str],
    elicited: Sequence[Elicitation],
    read_only: frozenset[str],
) -> Graded:
    """The turn's verdict by its steps, then by its forbidden and unconfirmed calls and the
    calls made again after the user refused an elicitation."""
    own = turn_calls(turn, calls)
    graded = _graded_turn(scenario, i, turn, own, done, calls, schemas, problem, read_only)
    if OUTCOMES.index(graded.outcome) > OUTCOMES.index("forbidden_call"):
        made = (
            forbidden(scenario.turn_scenario(i).never, own, schemas)
            or _unconfirmed(scenario, i, own, destructive, elicited)
            or ignored_decline(own, elicited)
        )
        if made:
            return Graded("forbidden_call", made, route=graded.route)
    return graded


def _graded_turn(
    scenario: Scenario,
    i: int,
    turn: TurnResult,
    own: list[ToolCallRecord],
    done: list[TurnResult],
    calls: list[ToolCallRecord],
    schemas: dict[str, dict[str, Any]],
    problem: str,
    read_only: frozenset[str],
) -> Graded:
    if scenario.dialogue()[i].must_ask:
        return _asked(scenario, i, turn, own, schemas=schemas, problem=problem)
    graded = grade(
        plain_view(scenario, i),
        credited_calls(scenario, i, turn, calls, schemas),
        turn.answer,
        turn.stop_reason,
        schemas,
        problem,
        read_only,
    )
    if graded.outcome in ("pass", "output_mismatch"):
        # Only where the steps were right: a turn that failed otherwise keeps its outcome.
        few = too_few_calls(scenario, i, own)
        if few:
            return Graded("no_tool_call", few, route=graded.route)
    if OUTCOMES.index(graded.outcome) > OUTCOMES.index("wrong_params"):
        wrong = cross_problem(scenario, i, graded.route, own, done, calls, schemas)
        if wrong:
            return Graded("wrong_params", wrong, route=graded.route)
    return graded


def too_few_calls(scenario: Scenario, i: int, own: list[ToolCallRecord]) -> str | None:
    """Why turn i made too few calls of its own (`Turn.needed_calls`: by default one on a turn
    with steps), in words; None when it made enough. Only calls a server received count: a
    step credited to an earlier turn's call (`known_from_earlier`) does the step, and the turn
    that must act still acts, as a leaderboard's checker fails an empty turn."""
    needed = scenario.dialogue()[i].needed_calls
    made = sum(1 for c in own if c.server is not None)
    if made >= needed:
        return None
    why = (
        "; earlier turns' calls did its steps (`known_from_earlier`), and `min_calls: 0` "
        "would let them stand alone"
        if made == 0 and scenario.dialogue()[i].min_calls is None
        else ""
    )
    return f"made {made} call(s) of its own, the turn needs at least {needed}{why}"
