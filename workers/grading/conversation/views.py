"""Turn i seen alone: its one-prompt view with values from earlier turns read as present, and the calls it is graded on."""

from __future__ import annotations

from typing import Any

from mcp_farm.schema import (
    ExpectedCall,
    ParamMatcher,
    Scenario,
    ToolCallRecord,
    TurnResult,
)
from mcp_farm.workers.grading.chained import Chain
from mcp_farm.workers.grading.steps import accepts, arguments_problem


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


def way_for(view: Scenario, route: str | None) -> Scenario:
    """The view as the route named (the graded one), else as its first way."""
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
