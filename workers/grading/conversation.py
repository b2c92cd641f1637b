"""Grading a trial's turns: each turn as a one-prompt scenario of its own, then all together.

Every trial but a simulated user's is graded here: a one-prompt scenario is a conversation of
one turn (`Scenario.dialogue`), whose verdict is its turn's. Each turn is graded by `grade` (its
calls, its steps, its answer); three things are added here:

- a value taken from an earlier turn's result (`from_turn` on a chained matcher): the turn is
  graded with such matchers read as "present", then each is checked by the chained matcher
  itself against the calls that did that step of that turn (the model's, when the turn passed;
  the farm's, when it failed and the conversation continued);
- a turn that must ask (`must_ask`): a tool called instead is `guessed`; a reply that is no
  question about the missing detail is `output_mismatch`;
- a turn whose steps were right but that made fewer calls of its own than it needs
  (`Turn.min_calls`; one on a turn with steps, whose steps earlier calls may have done) is
  `no_tool_call`.

The conversation passes only if every turn passed on its own; otherwise its outcome is its
first failed turn's (docs/conversations.md). Recovery after an error result (`recovered`) is
read here for every trial.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mcp_farm.schema import (
    OUTCOMES,
    Elicitation,
    ExpectedCall,
    Outcome,
    ParamMatcher,
    Scenario,
    StepVerdict,
    StopReason,
    ToolCallRecord,
    TurnResult,
    budgeted_search,
)
from mcp_farm.workers.grading.chained import Chain
from mcp_farm.workers.grading.elicited import confirmed_calls, ignored_decline
from mcp_farm.workers.grading.grade import Graded, grade, steps_of
from mcp_farm.workers.grading.matchers import check, forbidden, located
from mcp_farm.workers.grading.steps import accepts, arguments_problem, find
from mcp_farm.workers.grading.typed import Typed

ENDS: tuple[Outcome, ...] = ("harness_error", "infra_error", "context_overflow", "timeout")
"""Outcomes that end a conversation whatever its `on_turn_failure`: the session cannot go on
(a broken server or farm, a prompt that no longer fits the context and only grows), or the
model hung, and would most likely hang again."""

EARLY: tuple[Outcome, ...] = (*ENDS, "format_error")
"""Outcomes a must-ask turn gets as any turn does, before its own checks."""

NOT_GRADED = "not graded"
"""The detail of a turn the session has begun and not yet graded."""


def _plain(value: Any) -> Any:
    """A dumped matcher tree with every `from_turn` matcher read as `any: true`."""
    if isinstance(value, dict):
        if "from_turn" in value:
            return {"any": True}
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _crosses(matcher: ParamMatcher) -> bool:
    return any(m.from_turn is not None for _w, m in matcher.nested())


def _without_cross_turn(steps: list[ExpectedCall]) -> list[ExpectedCall]:
    return [
        ExpectedCall.model_validate(_plain(step.model_dump(exclude_unset=True)))
        if any(_crosses(m) for _at, block in step.param_blocks() for m in block.values())
        else step
        for step in steps
    ]


def plain_view(scenario: Scenario, i: int) -> Scenario:
    """Turn i as a one-prompt scenario, its values from earlier turns read as "present"."""
    view = scenario.turn_scenario(i)
    routes = [r.model_copy(update={"expect": _without_cross_turn(r.expect)}) for r in view.routes]
    return view.model_copy(update={"expect": _without_cross_turn(view.expect), "routes": routes})


def _way(view: Scenario, route: str | None) -> Scenario:
    return dict(view.ways()).get(route, view.ways()[0][1])


def turn_calls(turn: TurnResult, calls: list[ToolCallRecord]) -> list[ToolCallRecord]:
    return calls[turn.first_call : turn.first_call + turn.call_count]


def credited_calls(
    scenario: Scenario,
    i: int,
    turn: TurnResult,
    calls: list[ToolCallRecord],
    schemas: dict[str, dict[str, Any]],
) -> list[ToolCallRecord]:
    """Turn i's calls as its steps are graded: its own, and before them, for each step marked
    `known_from_earlier` that no call of the turn accepts, the latest call of an earlier turn
    that met it and came back without an error ("I already looked that up")."""
    own = turn_calls(turn, calls)
    earlier = [c for c in calls[: turn.first_call] if c.ok and c.server is not None]
    credited: dict[int, ToolCallRecord] = {}
    for _name, way in plain_view(scenario, i).ways():
        for step in way.expect:
            if not step.known_from_earlier or step.expect_error:
                continue
            if any(accepts(step, c) for c in own):
                continue
            met = [
                c
                for c in earlier
                if accepts(step, c)
                and not arguments_problem(
                    step, c, Chain({}), lambda _c, _d: None, schemas.get(c.tool)
                )
            ]
            if met:
                credited[met[-1].index] = met[-1]
    return [*sorted(credited.values(), key=lambda c: c.index), *own]


def _step_calls(
    scenario: Scenario,
    done: list[TurnResult],
    calls: list[ToolCallRecord],
    t: int,
    k: int,
    schemas: dict[str, dict[str, Any]],
) -> list[ToolCallRecord]:
    """The calls that did step k of turn t: the model's when the turn passed (found as its
    grade found them, numbers typed by `schemas`); when it failed, the model's call where it
    had done the step (`model_steps`), else the farm's."""
    if t >= len(done):
        return []
    turn = done[t]
    if turn.outcome != "pass":
        if k in turn.model_steps:
            return [c for c in calls if c.index == turn.model_steps[k]]
        return [c for c in turn.farm_calls if c.index == k]
    way = _way(plain_view(scenario, t), turn.route)
    found = find(
        way, credited_calls(scenario, t, turn, calls, schemas), lambda _c, _d: None, schemas
    )
    return found.met.get(k, [])


def _cross_value_problem(
    scenario: Scenario,
    step: ExpectedCall,
    call: ToolCallRecord,
    done: list[TurnResult],
    calls: list[ToolCallRecord],
    schemas: dict[str, dict[str, Any]],
) -> str | None:
    """Why a call of `step` does not take an earlier turn's value where the step says it
    must (numbers typed by `schemas`); None when it does (or the step takes none)."""
    for arg, matcher in step.params_for(call.tool).items():
        sources = {
            (m.from_turn, m.derived_from_step)
            for _w, m in matcher.nested()
            if m.from_turn is not None and m.derived_from_step is not None
        }
        if not sources or arg not in call.arguments:
            continue
        results = {k: _step_calls(scenario, done, calls, t, k, schemas) for t, k in sources}
        typed = Typed.argument(schemas.get(call.tool), arg)
        reason = check(matcher, call.arguments[arg], Chain(results), typed)
        if reason:
            return located(f"{call.tool}.{arg}", reason)
    return None


def _cross_problem(
    scenario: Scenario,
    i: int,
    route: str | None,
    own: list[ToolCallRecord],
    done: list[TurnResult],
    calls: list[ToolCallRecord],
    schemas: dict[str, dict[str, Any]],
) -> str | None:
    """Why no call of a step takes its earlier turn's value, for the first such step (numbers
    compared as the tools' input schemas, `schemas`, type them)."""
    way = _way(scenario.turn_scenario(i), route)
    for j, step in enumerate(way.expect):
        problems: list[str] = []
        for c in (c for c in own if accepts(step, c)):
            problem = _cross_value_problem(scenario, step, c, done, calls, schemas)
            if problem is None:
                break
            problems.append(problem)
        else:
            if problems:
                return f"step {j} ({step.label}): {problems[0]}"
    return None


def done_steps(
    scenario: Scenario,
    i: int,
    turn: TurnResult,
    done: list[TurnResult],
    calls: list[ToolCallRecord],
    schemas: dict[str, dict[str, Any]],
) -> dict[int, int]:
    """After turn i failed: the steps of its first route (the one the farm completes) that the
    model's own calls did, values from earlier turns included, each with the call that did it
    (as the grader's step verdicts place it). The farm does not make these again."""
    name, way = scenario.turn_scenario(i).ways()[0]
    own = credited_calls(scenario, i, turn, calls, schemas)
    found: dict[int, int] = {}
    for verdict in steps_of(plain_view(scenario, i), own, name, schemas):
        made = next((c for c in own if c.index == verdict.call), None)
        step = way.expect[verdict.step]
        if made is not None and not _cross_value_problem(
            scenario, step, made, done, calls, schemas
        ):
            found[verdict.step] = made.index
    return found


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
        wrong = _cross_problem(scenario, i, graded.route, own, done, calls, schemas)
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


def recovered(
    scenario: Scenario, calls: list[ToolCallRecord], route: str | None, turns: list[TurnResult]
) -> bool | None:
    """Whether every call that got an error result was followed by a successful call that did
    a step (on the route graded); None when no call got one. Both calls are of the same turn,
    and the step is that turn's: a step done in a later turn answers another request, so a
    model that gave up after the error did not recover because the user asked for something
    else next. A simulated user's trial has no turns of the farm's: its calls are one part,
    with the scenario's steps. Under `open_tools`, where no step is named, any later
    successful call counts. A call to a tool no server offers got no error result from any
    server (the farm answered it): it is `wrong_tool`'s to count, not recovery's."""
    if all(c.ok or not _served(c) for c in calls):
        return None
    if scenario.open_tools:
        parts = [(calls, {c.index for c in calls if c.ok})]
    elif turns:
        parts = [
            (own, _step_doers(_way(plain_view(scenario, t.index), t.route), own))
            for t in turns
            for own in [turn_calls(t, calls)]
        ]
    else:
        parts = [(calls, _step_doers(_way(scenario, route), calls))]
    return all(
        any(d > c.index for d in doers)
        for own, doers in parts
        for c in own
        if not c.ok and _served(c)
    )


def _served(call: ToolCallRecord) -> bool:
    """Whether a server received the call (its tool was offered): only then is a failure an
    error result."""
    return call.server is not None


def _step_doers(way: Scenario, own: list[ToolCallRecord]) -> set[int]:
    """Indexes of the successful calls among `own` that did a step of `way`."""
    return {
        c.index for met in find(way, own, lambda _c, _d: None).met.values() for c in met if c.ok
    }
