"""Values a turn takes from earlier turns' results: which calls did the step named, and whether the turn's calls took them."""

from __future__ import annotations

from typing import Any

from mcp_farm.schema import (
    ExpectedCall,
    Scenario,
    ToolCallRecord,
    TurnResult,
)
from mcp_farm.workers.grading.chained import Chain
from mcp_farm.workers.grading.conversation.views import credited_calls, plain_view, way_for
from mcp_farm.workers.grading.grade import steps_of
from mcp_farm.workers.grading.matchers import check, located
from mcp_farm.workers.grading.steps import accepts, find
from mcp_farm.workers.grading.typed import Typed


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
    way = way_for(plain_view(scenario, t), turn.route)
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


def cross_problem(
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
    way = way_for(scenario.turn_scenario(i), route)
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
