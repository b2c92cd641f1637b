"""Which call did which expected step, kept with the trial for people to read (the explorer's
trial page, `farm trial show`): the grade itself is the first check that failed, this is the
whole picture behind it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_farm.schema import (
    Scenario,
    StepVerdict,
    ToolCallRecord,
)
from mcp_farm.workers.grading.blame import Findings
from mcp_farm.workers.grading.steps import SchemaProblem, find


def step_verdicts(
    way: Scenario,
    calls: list[ToolCallRecord],
    schema_problem: SchemaProblem,
    schemas: Mapping[str, dict[str, Any]],
) -> list[StepVerdict]:
    """Each step of `way` (one route, or a scenario without routes) with the call that did it,
    or why none did. Nothing for open tool use or a way that expects no call."""
    if way.open_tools or not way.expect:
        return []
    found = find(way, calls, schema_problem, schemas)
    verdicts = []
    for j, step in enumerate(way.expect):
        met = [c.index for c in found.met.get(j, [])]
        call = found.placed.get(j, met[0] if met and not found.placed else None)
        verdicts.append(
            StepVerdict(
                step=j,
                label=step.label,
                call=call,
                met_by=met,
                problem="" if call is not None else _problem(j, found, met),
            )
        )
    return verdicts


def _problem(j: int, found: Findings, met: list[int]) -> str:
    """Why step j has no call: its own problem as the grader judged it (a call that was tried
    for it named first), else why it could not be placed."""
    if j in found.blame:
        _kind, judged = found.blame[j]
        call, why = judged[0]
        return why if call is None else f"call {call.index}: {why}"
    if met:
        # Met, but every call that met it is another step's in the one allowed order.
        return found.late.get(j, "met only by calls that other steps needed")
    return "not met"
