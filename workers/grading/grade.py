"""The outcome taxonomy, applied deterministically in its fixed order."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import jsonschema
from referencing.exceptions import Unresolvable  # jsonschema's own dependency (>= 4.18)

from mcp_farm.scenarios import find_scenario
from mcp_farm.schema import (
    OUTCOMES,
    Outcome,
    PatternTimeout,
    Scenario,
    StopReason,
    ToolCallRecord,
    TrialSpec,
    budgeted_search,
)
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.grading.schemacheck import schema_error
from mcp_farm.workers.grading.steps import find
from mcp_farm.workers.model.safejson import (
    arguments_key,
    shorten,
    wire_problem,
)


@dataclass(frozen=True)
class Graded:
    outcome: Outcome
    detail: str
    first_try: bool = False
    """A pass in which every call of an expected tool did a step and none was repeated: no
    wrong attempt came before the right one (what `calls: strict` requires)."""
    route: str | None = None
    """On a scenario with routes: the route the trial passed by, or, when it passed by none,
    the one whose outcome it was given."""


def _schema_problem(
    call: ToolCallRecord, schema: dict[str, Any] | None, declared: set[str] | None = None
) -> str | None:
    """Extra arguments or wrong types, judged against the tool's own input schema.

    An argument the step declares (an `optional` one, say) is never extra, even where the
    schema does not list it. The schema is the server's: one that cannot be applied is an
    InfraError, not the model's.
    """
    if not schema:
        return None
    properties = schema.get("properties", {})
    allowed = (set(properties) if isinstance(properties, dict) else set()) | (declared or set())
    extra = sorted(str(name) for name in set(call.arguments) - allowed)
    if extra:
        return f"unexpected argument(s) {', '.join(extra)} for {call.tool}"
    problem = wire_problem(call.arguments)
    if problem:
        return f"{call.tool}: arguments are not plain JSON: {problem}"
    try:
        error = schema_error(call.arguments, schema)
    except (jsonschema.SchemaError, Unresolvable, RecursionError) as exc:
        raise InfraError(f"the input schema of {call.tool} cannot be applied: {exc}") from None
    return f"{call.tool}: {error.message}" if error is not None else None


def _match_steps(
    scenario: Scenario, calls: list[ToolCallRecord], schemas: dict[str, dict[str, Any]]
) -> tuple[Graded | None, list[ToolCallRecord]]:
    """wrong_params or wrong_sequence, or None when every step is met in an allowed order;
    and the calls of an expected tool that did no step (a wrong attempt, a failed call)."""
    found = find(
        scenario,
        calls,
        lambda c, declared: _schema_problem(c, schemas.get(c.tool), declared),
        schemas,
    )
    doing = {c.index for met in found.met.values() for c in met}
    missed = [c for c in calls if c.tool in scenario.accepted_tools and c.index not in doing]
    if found.params:
        return Graded("wrong_params", found.params), missed
    if found.sequence:
        return Graded("wrong_sequence", found.sequence), missed
    if found.failed:
        return Graded("wrong_params", found.failed), missed
    return None, missed


def scenario_of(spec: TrialSpec) -> Scenario:
    """The scenario of a trial as it is run and graded, live or rescored: the stored version,
    with the sweep's override of how calls are counted (`calls:`). The sweep's other settings
    (`result_chars`, `tool_naming`) change what the model was shown, which the trial records;
    grading reads the tools' own names and the results as recorded, so they need nothing here."""
    scenario = find_scenario(spec.scenario.suite, spec.scenario.id, spec.scenario.version)
    if spec.calls is not None:
        scenario = scenario.model_copy(update={"calls": spec.calls})
    return scenario


def repeats_allowed(scenario: Scenario) -> int:
    """Identical calls allowed before a tool loop: one under `calls: strict`."""
    return 1 if scenario.calls == "strict" else scenario.max_repeats


def _loop(calls: list[ToolCallRecord], allowed: int) -> str | None:
    counts: dict[str, int] = {}
    for c in calls:
        key = arguments_key(c.tool, c.arguments)
        counts[key] = counts.get(key, 0) + 1
        if counts[key] > allowed:
            return f"{c.tool} called {counts[key]} times with the same arguments"
    return None


def _strict_problem(missed: list[ToolCallRecord]) -> str | None:
    if not missed:
        return None
    c = missed[0]
    what = "failed" if not c.ok else "matches no step"
    return f"calls: strict: call {c.index} ({c.tool}) {what}: {shorten(c.arguments)}"


def _grade_open(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    final_answer: str | None,
    stop_reason: StopReason,
    schemas: dict[str, dict[str, Any]],
) -> Graded:
    """Open tool use: any offered tool, with well-formed arguments, no loop, then an answer."""
    for c in calls:
        if c.server is None:
            return Graded("wrong_tool", f"called {shorten(c.tool)}, which no server offers")
    for c in calls:
        problem = _schema_problem(c, schemas.get(c.tool))
        if problem:
            return Graded("wrong_params", problem)
    graded = _loop_or_answer(scenario, calls, final_answer, stop_reason)
    first = graded.outcome == "pass" and _loop(calls, 1) is None
    return Graded(graded.outcome, graded.detail, first_try=first)


def _loop_or_answer(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    final_answer: str | None,
    stop_reason: StopReason,
) -> Graded:
    """The last checks of the taxonomy: tool_loop, output_mismatch, pass."""
    loop = _loop(calls, repeats_allowed(scenario))
    if loop or stop_reason == "tool_loop":
        return Graded("tool_loop", loop or "repeated identical calls")
    if stop_reason != "answer" or final_answer is None:
        return Graded("output_mismatch", f"no final answer within {scenario.max_turns} turns")
    if scenario.final_answer and not _mentions(scenario.final_answer, final_answer):
        return Graded("output_mismatch", f"the answer does not mention /{scenario.final_answer}/")
    return Graded("pass", "")


def _mentions(pattern: str, answer: str) -> bool:
    """Whether the answer holds the scenario's `final_answer` pattern (case-insensitive)."""
    return budgeted_search(pattern, answer, field="final_answer", flags=re.IGNORECASE) is not None


def grade(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    final_answer: str | None,
    stop_reason: StopReason,
    schemas: dict[str, dict[str, Any]],
    problem: str = "",
) -> Graded:
    """The first outcome of the taxonomy that applies, in the order of `Outcome` (schema/vocab.py).

    A pattern of the scenario that runs past its time budget raises InfraError naming the
    scenario and the field: the trial cannot be graded, which is not the model's doing."""
    try:
        return _graded(scenario, calls, final_answer, stop_reason, schemas, problem)
    except PatternTimeout as exc:
        raise InfraError(f"scenario {scenario.id}: {exc}") from None


def _graded(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    final_answer: str | None,
    stop_reason: StopReason,
    schemas: dict[str, dict[str, Any]],
    problem: str,
) -> Graded:
    if stop_reason in ("harness_error", "infra_error"):
        return Graded(stop_reason, problem)
    if stop_reason == "time_limit":
        return Graded(
            "timeout",
            f"no answer within the scenario's {scenario.time_limit_s:g} s of tool, server and "
            "setup time",
        )
    if stop_reason == "model_time_limit":
        return Graded("timeout", problem or "the model gave no reply within its limit")
    if stop_reason == "format_error":
        return Graded("format_error", problem)
    if not scenario.routes:
        return _grade_way(scenario, calls, final_answer, stop_reason, schemas)
    return _by_route(scenario, calls, final_answer, stop_reason, schemas)


def _by_route(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    final_answer: str | None,
    stop_reason: StopReason,
    schemas: dict[str, dict[str, Any]],
) -> Graded:
    """The first route the trial passes by; else the route it got furthest on (the latest
    outcome in the taxonomy's order), the first listed of those that got as far."""
    closest: Graded | None = None
    for name, way in scenario.ways():
        graded = _grade_way(way, calls, final_answer, stop_reason, schemas)
        if graded.outcome == "pass":
            return Graded("pass", f"route {name}", graded.first_try, route=name)
        if closest is None or OUTCOMES.index(graded.outcome) > OUTCOMES.index(closest.outcome):
            closest = Graded(graded.outcome, f"route {name}: {graded.detail}", route=name)
    assert closest is not None  # a scenario with routes has two or more
    return closest


def _grade_way(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    final_answer: str | None,
    stop_reason: StopReason,
    schemas: dict[str, dict[str, Any]],
) -> Graded:
    """The tool and answer checks of the taxonomy, for a scenario's one way of doing its task."""
    if scenario.open_tools:
        return _grade_open(scenario, calls, final_answer, stop_reason, schemas)
    if scenario.expect and not calls:
        return Graded("no_tool_call", "the model answered without calling a tool")
    if not scenario.expect and calls:
        return Graded("wrong_tool", f"no tool should be called; called {calls[0].tool}")
    expected = scenario.accepted_tools
    labels = ", ".join(step.label for step in scenario.expect)
    for c in calls:
        if c.server is None:
            return Graded("wrong_tool", f"called {shorten(c.tool)}, which no server offers")
        if c.tool not in expected | set(scenario.allowed_extra):
            return Graded("wrong_tool", f"called {c.tool}; expected {labels}")
    if scenario.expect and not any(c.tool in expected for c in calls):
        return Graded("wrong_tool", f"never called {labels}")
    verdict, missed = _match_steps(scenario, calls, schemas)
    if verdict:
        return verdict
    strict = _strict_problem(missed) if scenario.calls == "strict" else None
    if strict:
        return Graded("wrong_params", strict)
    graded = _loop_or_answer(scenario, calls, final_answer, stop_reason)
    if graded.outcome != "pass":
        return graded
    first = not missed and _loop(calls, 1) is None
    return Graded("pass", "", first_try=first)
