"""Whether a model recovered after each error result its calls got, turn by turn."""

from __future__ import annotations

from mcp_farm.schema import (
    Scenario,
    ToolCallRecord,
    TurnResult,
)
from mcp_farm.workers.grading.conversation.views import plain_view, turn_calls, way_for
from mcp_farm.workers.grading.steps import find


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
            (own, _step_doers(way_for(plain_view(scenario, t.index), t.route), own))
            for t in turns
            for own in [turn_calls(t, calls)]
        ]
    else:
        parts = [(calls, _step_doers(way_for(scenario, route), calls))]
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
