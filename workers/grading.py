"""The outcome taxonomy, applied deterministically in its fixed order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jsonschema
from referencing.exceptions import Unresolvable  # jsonschema's own dependency (>= 4.18)

from schema import ExpectedCall, Outcome, Scenario, StopReason, ToolCallRecord
from workers.errors import InfraError
from workers.matchers import answer_pattern, check
from workers.safejson import arguments_key, shorten, wire_problem


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    detail: str


def _schema_problem(call: ToolCallRecord, schema: dict[str, Any] | None) -> str | None:
    """Extra arguments or wrong types, judged against the tool's own input schema.

    The schema is the server's: one that cannot be applied is an InfraError, not the model's.
    """
    if not schema:
        return None
    properties = schema.get("properties", {})
    allowed = set(properties) if isinstance(properties, dict) else set()
    extra = sorted(str(name) for name in set(call.arguments) - allowed)
    if extra:
        return f"unexpected argument(s) {', '.join(extra)} for {call.tool}"
    problem = wire_problem(call.arguments)
    if problem:
        return f"{call.tool}: arguments are not plain JSON: {problem}"
    try:
        jsonschema.validate(call.arguments, schema)
    except jsonschema.ValidationError as exc:
        return f"{call.tool}: {exc.message}"
    except (jsonschema.SchemaError, Unresolvable, RecursionError) as exc:
        raise InfraError(f"the input schema of {call.tool} cannot be applied: {exc}") from None
    return None


def _params_problem(
    step: ExpectedCall,
    call: ToolCallRecord,
    prior: dict[int, ToolCallRecord],
    schema: dict[str, Any] | None,
) -> str | None:
    for arg, matcher in step.params.items():
        if arg not in call.arguments:
            return f"{call.tool}: missing argument {arg!r}"
        reason = check(matcher, call.arguments[arg], prior)
        if reason:
            return f"{call.tool}.{arg}: {reason}"
    return _schema_problem(call, schema)


def _is_step(step: ExpectedCall, call: ToolCallRecord) -> bool:
    return call.tool == step.tool and (step.server is None or call.server == step.server)


def _match_steps(
    scenario: Scenario, calls: list[ToolCallRecord], schemas: dict[str, dict[str, Any]]
) -> Verdict | None:
    """wrong_params or wrong_sequence, or None when every step is met in an allowed order."""
    matched: dict[int, ToolCallRecord] = {}
    params_problem: str | None = None
    sequence_problem: str | None = None
    last = -1
    for j, step in enumerate(scenario.expect):
        candidates = [c for c in calls if _is_step(step, c)]
        if not candidates:
            sequence_problem = sequence_problem or f"step {j} ({step.tool}) never called"
            continue
        sources = {
            m.derived_from_step for m in step.params.values() if m.derived_from_step is not None
        } - set(matched)
        if sources:
            # A chained argument whose source step never happened: the chain is broken.
            sequence_problem = sequence_problem or (
                f"step {j} ({step.tool}) needs the result of step {min(sources)}, never obtained"
            )
            continue
        problems = [_params_problem(step, c, matched, schemas.get(c.tool)) for c in candidates]
        good = [c for c, p in zip(candidates, problems, strict=True) if p is None]
        if not good:
            params_problem = params_problem or problems[0]
            continue
        later = [c for c in good if c.index > last] if scenario.order == "ordered" else good
        if not later:
            sequence_problem = (
                sequence_problem or f"step {j} ({step.tool}) came before step {j - 1}"
            )
            later = good
        matched[j] = later[0]
        last = later[0].index
    if params_problem:
        return Verdict("wrong_params", params_problem)
    if sequence_problem:
        return Verdict("wrong_sequence", sequence_problem)
    return None


def _loop(scenario: Scenario, calls: list[ToolCallRecord]) -> str | None:
    counts: dict[str, int] = {}
    for c in calls:
        key = arguments_key(c.tool, c.arguments)
        counts[key] = counts.get(key, 0) + 1
        if counts[key] > scenario.max_repeats:
            return f"{c.tool} called {counts[key]} times with the same arguments"
    return None


def _grade_open(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    final_answer: str | None,
    stop_reason: StopReason,
    schemas: dict[str, dict[str, Any]],
) -> Verdict:
    """Open tool use: any offered tool, with well-formed arguments, no loop, then an answer."""
    for c in calls:
        if c.server is None:
            return Verdict("wrong_tool", f"called {shorten(c.tool)}, which no server offers")
    for c in calls:
        problem = _schema_problem(c, schemas.get(c.tool))
        if problem:
            return Verdict("wrong_params", problem)
    return _loop_or_answer(scenario, calls, final_answer, stop_reason)


def _loop_or_answer(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    final_answer: str | None,
    stop_reason: StopReason,
) -> Verdict:
    """The last checks of the taxonomy: tool_loop, output_mismatch, pass."""
    loop = _loop(scenario, calls)
    if loop or stop_reason == "tool_loop":
        return Verdict("tool_loop", loop or "repeated identical calls")
    if stop_reason != "answer" or final_answer is None:
        return Verdict("output_mismatch", f"no final answer within {scenario.max_turns} turns")
    if scenario.final_answer and not answer_pattern(scenario.final_answer).search(final_answer):
        return Verdict("output_mismatch", f"the answer does not mention /{scenario.final_answer}/")
    return Verdict("pass", "")


def grade(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    final_answer: str | None,
    stop_reason: StopReason,
    schemas: dict[str, dict[str, Any]],
    problem: str = "",
) -> Verdict:
    """The first outcome of the taxonomy that applies (DESIGN.md §4)."""
    if stop_reason == "infra_error":
        return Verdict("infra_error", problem)
    if stop_reason == "time_limit":
        return Verdict("timeout", f"no answer within {scenario.time_limit_s:g} s")
    if stop_reason == "format_error":
        return Verdict("format_error", problem)
    if scenario.open_tools:
        return _grade_open(scenario, calls, final_answer, stop_reason, schemas)
    if scenario.expect and not calls:
        return Verdict("no_tool_call", "the model answered without calling a tool")
    if not scenario.expect and calls:
        return Verdict("wrong_tool", f"no tool should be called; called {calls[0].tool}")
    allowed = set(scenario.expected_tools) | set(scenario.allowed_extra)
    for c in calls:
        if c.server is None:
            return Verdict("wrong_tool", f"called {shorten(c.tool)}, which no server offers")
        if c.tool not in allowed:
            return Verdict(
                "wrong_tool", f"called {c.tool}; expected {', '.join(scenario.expected_tools)}"
            )
    if scenario.expect and not any(c.tool in scenario.expected_tools for c in calls):
        return Verdict("wrong_tool", f"never called {', '.join(scenario.expected_tools)}")
    verdict = _match_steps(scenario, calls, schemas)
    if verdict:
        return verdict
    return _loop_or_answer(scenario, calls, final_answer, stop_reason)
