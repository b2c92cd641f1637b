"""Does each step's `example` call meet the step's own matchers? The self-checks replay it as
the ideal agent's call, so one that does not is a scenario that fails its own grading."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_farm.schema import (
    ExpectedCall,
    FarmError,
    Scenario,
    ToolOption,
)
from mcp_farm.workers.grading.matchers import (
    absent_problem,
    check,
    located,
)
from mcp_farm.workers.grading.typed import Typed


def example_problems(
    scenario: Scenario, where: str, schemas: Mapping[str, dict[str, Any]] | None = None
) -> list[tuple[str, str]]:
    """(field, problem) for each argument of a step's example that its matcher refuses.
    Arguments derived from an earlier step's result are not judged: no result is at hand.
    `schemas` (tool name → input schema, where the servers were listed) type the numbers
    `exact` and `one_of` compare, as in a grade."""
    found = []
    for at, steps in scenario.step_lists():
        for j, step in enumerate(steps):
            if step.example is not None:
                field = f"{where}.{at}[{j}].example"
                schema = (schemas or {}).get(step.names[0])
                found += [(field + f, p) for f, p in _step_problems(step, step.example, schema)]
            for n, option in enumerate(() if isinstance(step.tool, str) else step.tool.one_of):
                if isinstance(option, ToolOption) and option.example is not None:
                    field = f"{where}.{at}[{j}].tool.one_of[{n}].example"
                    schema = (schemas or {}).get(option.name)
                    problems = _step_problems(step, option.example, schema, option.name)
                    found += [(field + f, p) for f, p in problems]
    return found


def _step_problems(
    step: ExpectedCall,
    example: dict[str, object],
    schema: dict[str, Any] | None,
    tool: str | None = None,
) -> list[tuple[str, str]]:
    """Problems of `example` as a call of `tool` (by default the step's first, the one the
    ideal agent calls), judged by that tool's input `schema` where it is known."""
    tool = tool or step.names[0]
    found = []
    for arg, matcher in step.params_for(tool).items():
        if matcher.sources():
            continue
        if arg not in example:
            if absent_problem(matcher):
                found.append(("", f"leaves out {arg!r}, which the step's matcher requires"))
            continue
        try:
            reason = check(matcher, example[arg], typed=Typed.argument(schema, arg))
        except FarmError as exc:  # a matcher that cannot be applied (a pattern past its budget)
            reason = str(exc)
        if reason:
            found.append((f".{arg}", f"breaks the step's own matcher: {located(arg, reason)}"))
    return found
