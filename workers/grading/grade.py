"""The outcome taxonomy, applied deterministically in its fixed order."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import jsonschema
from referencing.exceptions import Unresolvable  # jsonschema's own dependency (>= 4.18)

from mcp_farm.scenarios import find_scenario
from mcp_farm.scenarios.usersim import no_user_card
from mcp_farm.schema import (
    OUTCOMES,
    Outcome,
    PatternTimeout,
    Scenario,
    StepVerdict,
    StopReason,
    ToolCallRecord,
    TrialSpec,
    budgeted_search,
)
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.grading.blame import Findings
from mcp_farm.workers.grading.counting import (
    extra_call,
    first_try,
    loop_problem,
    past_limit,
)
from mcp_farm.workers.grading.matchers import forbidden
from mcp_farm.workers.grading.schemacheck import schema_error
from mcp_farm.workers.grading.steps import find, step_verdicts
from mcp_farm.workers.model.safejson import (
    shorten,
    wire_problem,
)


@dataclass(frozen=True)
class Graded:
    outcome: Outcome
    detail: str
    first_try: bool = False
    """A pass in which each call of an expected tool did a step of its own and no other call
    repeated an earlier one: no wrong attempt, and no second call for a step done (what
    `calls: strict` requires)."""
    route: str | None = None
    """On a scenario with routes: the route the trial passed by, or, when it passed by none,
    the one whose outcome it was given."""
    steps_done: int = 0
    """Steps some call did: how far the trial got on its way (routes compare it on a tie)."""


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
    scenario: Scenario,
    calls: list[ToolCallRecord],
    schemas: dict[str, dict[str, Any]],
    read_only: frozenset[str],
) -> tuple[Graded | None, Findings]:
    """wrong_params, a loop, or wrong_sequence, or None when every step is met in an allowed
    order; and what the steps found.

    A loop outranks a step missing or out of order and a call that failed: the session stops
    a trial at its loop, so what is missing after it is what the stop cut off, and under
    `calls: strict` a repeat is where the trial went round instead of on."""
    found = find(
        scenario,
        calls,
        lambda c, declared: _schema_problem(c, schemas.get(c.tool), declared),
        schemas,
    )
    done = found.steps_met
    if found.params:
        return Graded("wrong_params", found.params, steps_done=done), found
    loop = loop_problem(scenario, calls, found, read_only)
    if loop:
        return Graded("tool_loop", loop, steps_done=done), found
    if found.sequence:
        return Graded("wrong_sequence", found.sequence, steps_done=done), found
    if found.failed:
        return Graded("wrong_params", found.failed, steps_done=done), found
    return None, found


def scenario_of(spec: TrialSpec) -> Scenario:
    """The scenario of a trial as it is run and graded, live or rescored: the stored version,
    with the sweep's overrides of how calls are counted (`calls:`) and of
    `confirm_destructive`, and a card's no-user arm (the facts in the opening, no `must_ask`). The sweep's other settings (`result_chars`, `tool_naming`) change
    what the model was shown, which the trial records; grading reads the tools' own names and
    the results as recorded, so they need nothing here."""
    scenario = find_scenario(spec.scenario.suite, spec.scenario.id, spec.scenario.version)
    if spec.calls is not None:
        scenario = scenario.model_copy(update={"calls": spec.calls})
    if spec.confirm_destructive is not None:
        scenario = scenario.model_copy(update={"confirm_destructive": spec.confirm_destructive})
    if spec.grade_by is not None and scenario.probes:
        scenario = scenario.model_copy(update={"grade_by": spec.grade_by})
    if spec.user_arm == "no_user" and scenario.user_sim is not None:
        # Every fact is in the opening: there is nothing the agent had to ask.
        card = no_user_card(scenario.user_sim)
        scenario = scenario.model_copy(update={"user_sim": card, "must_ask": []})
    return scenario


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
    allowed = 1 if scenario.calls == "strict" else scenario.max_repeats
    graded = _loop_or_answer(scenario, final_answer, stop_reason, past_limit(calls, allowed))
    first = graded.outcome == "pass" and past_limit(calls, 1) is None
    return Graded(graded.outcome, graded.detail, first_try=first)


def _loop_or_answer(
    scenario: Scenario,
    final_answer: str | None,
    stop_reason: StopReason,
    loop: str | None = None,
) -> Graded:
    """The last checks of the taxonomy: tool_loop, output_mismatch, pass."""
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
    read_only: frozenset[str] = frozenset(),
) -> Graded:
    """The first outcome of the taxonomy that applies, in the order of `Outcome` (schema/vocab.py).
    `read_only`: the tools their servers mark `readOnlyHint: true`, whose copies
    `calls: strict` lets be.

    A pattern of the scenario that runs past its time budget raises InfraError naming the
    scenario and the field: the trial cannot be graded, which is not the model's doing."""
    try:
        return _graded(scenario, calls, final_answer, stop_reason, schemas, problem, read_only)
    except PatternTimeout as exc:
        raise InfraError(f"cannot grade: scenario {scenario.id}: {exc}") from None


def _graded(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    final_answer: str | None,
    stop_reason: StopReason,
    schemas: dict[str, dict[str, Any]],
    problem: str,
    read_only: frozenset[str],
) -> Graded:
    if stop_reason in ("harness_error", "infra_error"):
        return Graded(stop_reason, problem)
    if stop_reason == "context_overflow":
        return Graded("context_overflow", problem or "the prompt did not fit the model's context")
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
    if scenario.never and (made := forbidden(scenario.never, calls, schemas)):
        return Graded("forbidden_call", made)
    if not scenario.routes:
        return _grade_way(scenario, calls, final_answer, stop_reason, schemas, read_only)
    return _by_route(scenario, calls, final_answer, stop_reason, schemas, read_only)


def _by_route(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    final_answer: str | None,
    stop_reason: StopReason,
    schemas: dict[str, dict[str, Any]],
    read_only: frozenset[str],
) -> Graded:
    """The first route the trial passes by; else the route it got furthest on: the latest
    outcome in the taxonomy's order, then the most steps done (the route the model was on),
    then the first listed."""
    closest: Graded | None = None
    for name, way in scenario.ways():
        graded = _grade_way(way, calls, final_answer, stop_reason, schemas, read_only)
        if graded.outcome == "pass":
            return Graded("pass", f"route {name}", graded.first_try, route=name)
        if closest is None or _further(graded, closest):
            closest = Graded(
                graded.outcome,
                f"route {name}: {graded.detail}",
                route=name,
                steps_done=graded.steps_done,
            )
    assert closest is not None  # a scenario with routes has two or more
    return closest


def _further(graded: Graded, than: Graded) -> bool:
    a, b = OUTCOMES.index(graded.outcome), OUTCOMES.index(than.outcome)
    return a > b or (a == b and graded.steps_done > than.steps_done)


def _grade_way(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    final_answer: str | None,
    stop_reason: StopReason,
    schemas: dict[str, dict[str, Any]],
    read_only: frozenset[str],
) -> Graded:
    """The tool and answer checks of the taxonomy, for a scenario's one way of doing its task."""
    if scenario.open_tools:
        return _grade_open(scenario, calls, final_answer, stop_reason, schemas)
    if scenario.expect and not calls:
        return Graded("no_tool_call", "the model answered without calling a tool")
    if not scenario.expect:
        # Only `allowed_extra` may be called where no step is expected (a turn answered from
        # what the agent knows may still look something up that the scenario allows).
        for c in calls:
            if c.server is None or c.tool not in scenario.allowed_extra:
                return Graded("wrong_tool", f"no tool should be called; called {c.tool}")
    expected = scenario.accepted_tools
    labels = ", ".join(step.label for step in scenario.expect)
    for c in calls:
        if c.server is None:
            return Graded("wrong_tool", f"called {shorten(c.tool)}, which no server offers")
        if c.tool not in expected | set(scenario.allowed_extra):
            return Graded("wrong_tool", f"called {c.tool}; expected {labels}")
    if scenario.expect and not any(c.tool in expected for c in calls):
        return Graded("wrong_tool", f"never called {labels}")
    verdict, found = _match_steps(scenario, calls, schemas, read_only)
    if verdict:
        return verdict
    done = found.steps_met
    extra = extra_call(scenario, calls, found, read_only) if scenario.calls == "strict" else None
    if extra:
        return Graded(*extra, steps_done=done)
    graded = _loop_or_answer(scenario, final_answer, stop_reason)
    if graded.outcome != "pass":
        return Graded(graded.outcome, graded.detail, steps_done=done)
    return Graded("pass", "", first_try=first_try(scenario, calls, found), steps_done=done)


def steps_of(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    route: str | None,
    schemas: dict[str, dict[str, Any]],
) -> list[StepVerdict]:
    """Each step of the route graded (or of the scenario) with the call that did it or why
    none did: what a person reads beside the verdict, which names only the first problem."""
    way = dict(scenario.ways()).get(route, scenario.ways()[0][1])
    return step_verdicts(
        way, calls, lambda c, declared: _schema_problem(c, schemas.get(c.tool), declared), schemas
    )
