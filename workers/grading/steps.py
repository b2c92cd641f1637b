"""Which calls meet which expected step, and whether the steps came in an allowed order.

A call meets a step when it names one of the step's tools, its arguments satisfy the step's
matchers (chained values taken from results obtained before it), it fits the tool's schema,
and it worked (or failed, for a step with `expect_error`). Then each step is given a call of
its own such that every step comes after the steps it requires (`after`, or the scenario's
order). What went wrong is kept by kind, and the grade picks in this order:

1. an argument wrong: `wrong_params`;
2. a step missing, out of order, or using a value before it was obtained (a chained step
   called before the step whose result it needs): `wrong_sequence`;
3. a call that was right but came back as an error: `wrong_params`. It comes last because a
   missing earlier step (a folder never made) explains such an error better than the call.

`step_verdicts` keeps the whole picture for people (the explorer, `farm trial show`): each
step with the call that did it, or why none did.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp_farm.schema import (
    ExpectedCall,
    Scenario,
    StepVerdict,
    ToolCallRecord,
)
from mcp_farm.workers.grading.blame import (
    Findings,
    assign_blame,
)
from mcp_farm.workers.grading.chained import Chain
from mcp_farm.workers.grading.matchers import (
    absent_problem,
    check,
    located,
)
from mcp_farm.workers.grading.typed import Typed
from mcp_farm.workers.model.safejson import shorten

SEARCH_LIMIT = 20_000
"""Placements tried before giving up on finding an allowed order. Steps not ordered relative
to each other that accept the same calls make the search branch; real traces need a few
dozen tries, and this bound keeps a pathological one (hundreds of alike calls) finite."""

SchemaProblem = Callable[[ToolCallRecord, set[str]], str | None]
"""Judges a call's arguments against its tool's input schema; the set names arguments the
step declares, which are never extra."""


def accepts(step: ExpectedCall, call: ToolCallRecord) -> bool:
    return call.tool in step.names and (step.server is None or call.server == step.server)


def arguments_problem(
    step: ExpectedCall,
    call: ToolCallRecord,
    chain: Chain,
    schema_problem: SchemaProblem,
    schema: dict[str, Any] | None = None,
) -> str | None:
    """Why the call's arguments do not meet the step; `schema` is the tool's input schema,
    which types the numbers `exact` and `one_of` compare."""
    for arg, matcher in step.params_for(call.tool).items():
        if arg not in call.arguments:
            if absent_problem(matcher):
                return f"{call.tool}: missing argument {arg!r}"
            continue
        reason = check(matcher, call.arguments[arg], chain, Typed.argument(schema, arg))
        if reason:
            return located(f"{call.tool}.{arg}", reason)
    if step.expect_error and not call.ok:
        # The step wants this call to fail, and a call that breaks the tool's input schema
        # fails at the server (the SDK refuses it): an input-validation error is one to
        # recover from like any other, so the schema is not held against it.
        return None
    return schema_problem(call, step.declared(call.tool))


def _outcome_problem(step: ExpectedCall, call: ToolCallRecord) -> str | None:
    if call.ok == (not step.expect_error):
        return None
    if step.expect_error:
        return f"{call.tool} was expected to fail, and it worked"
    return f"{call.tool} returned an error: {shorten(call.error or '')}"


def _meet(
    j: int,
    steps: list[ExpectedCall],
    calls: list[ToolCallRecord],
    found: Findings,
    schema_problem: SchemaProblem,
    schemas: Mapping[str, dict[str, Any]],
) -> None:
    """Record the calls that meet step j, or why none does."""
    step = steps[j]
    found.met[j] = []
    candidates = [c for c in calls if accepts(step, c)]
    if not candidates:
        found.defer(j, "sequence", _never_called(j, step, calls))
        return
    unmet = sorted(k for k in step.sources() if not found.met.get(k))
    if unmet:
        # A chained argument whose source step never happened: the chain is broken. When the
        # source was called but failed, that failure is the problem to report, not the chain,
        # unless this step was called before the source was even tried (and may be why the
        # source failed: a search made after the delete finds nothing).
        k = unmet[0]
        tried = [c.index for c in calls if accepts(steps[k], c)]
        if tried and all(c.index < min(tried) for c in candidates):
            found.defer(j, "sequence", _before(j, k, steps))
            return
        kind = "failed" if set(unmet) <= found.errored else "sequence"
        found.defer(
            j, kind, f"step {j} ({step.label}) needs the result of step {k}, never obtained"
        )
        return
    late: str | None = None
    wrong: list[tuple[ToolCallRecord | None, str]] = []
    failed: list[tuple[ToolCallRecord | None, str]] = []
    for c in candidates:
        schema = schemas.get(c.tool)
        problem = arguments_problem(
            step, c, Chain(found.met, before=c.index), schema_problem, schema
        )
        if (
            problem
            and step.sources()
            and not arguments_problem(step, c, Chain(found.met), schema_problem, schema)
        ):
            late = late or f"step {j} ({step.label}) used a value before the step it comes from"
        elif problem and (early := _early(j, steps, c, found, schema_problem, schema)):
            late = late or early
        elif problem:
            wrong.append((c, problem))
        elif outcome := _outcome_problem(step, c):
            failed.append((c, outcome))
        else:
            found.met[j].append(c)
    if late:
        found.late[j] = late
    if found.met[j]:
        return
    if wrong:
        found.blame[j] = ("params", wrong)
    elif late:
        found.defer(j, "sequence", late)
    else:
        found.errored.add(j)
        found.blame[j] = ("failed", failed or [(None, f"step {j} ({step.label}) not met")])


def _early(
    j: int,
    steps: list[ExpectedCall],
    call: ToolCallRecord,
    found: Findings,
    schema_problem: SchemaProblem,
    schema: dict[str, Any] | None,
) -> str | None:
    """Why a call of step j came too early: made before any call of a step its chained values
    come from, and right in every argument that needs no result. Its value could not come
    from that result, which may since have changed (a search made after a delete no longer
    finds what was deleted), so the order is what is wrong."""
    step = steps[j]
    before = sorted(k for k in step.sources() if all(c.index > call.index for c in found.met[k]))
    if not before or not _right_but_chained(step, call, schema_problem, schema):
        return None
    return _before(j, before[0], steps)


def _before(j: int, k: int, steps: list[ExpectedCall]) -> str:
    return (
        f"step {j} ({steps[j].label}) was called before step {k} ({steps[k].label}), "
        "whose result it needs"
    )


def _right_but_chained(
    step: ExpectedCall,
    call: ToolCallRecord,
    schema_problem: SchemaProblem,
    schema: dict[str, Any] | None,
) -> bool:
    """Whether the call's arguments are right, the chained values aside."""
    for arg, matcher in step.params_for(call.tool).items():
        if matcher.sources():
            continue
        if arg not in call.arguments:
            if absent_problem(matcher):
                return False
        elif check(matcher, call.arguments[arg], typed=Typed.argument(schema, arg)):
            return False
    return schema_problem(call, step.declared(call.tool)) is None


def _never_called(j: int, step: ExpectedCall, calls: list[ToolCallRecord]) -> str:
    """Why no call is a candidate for step j: never called, or called on another server."""
    elsewhere = sorted({str(c.server) for c in calls if c.tool in step.names and c.server})
    if step.server is not None and elsewhere:
        return f"step {j} ({step.label}) was called on {', '.join(elsewhere)}, not on {step.server}"
    return f"step {j} ({step.label}) never called"


def _place(scenario: Scenario, found: Findings) -> str | None:
    """None when every step can have a call of its own, after the steps it requires; else
    why the first step that could not be placed was not."""
    steps, met = scenario.expect, found.met
    required = [s.requires(j, scenario.order) for j, s in enumerate(steps)]
    chosen: dict[int, int] = {}
    used: set[int] = set()
    tries = 0
    first: list[str] = []

    def place(j: int) -> bool:
        nonlocal tries
        if j == len(steps):
            return True
        floor = max((chosen[i] for i in required[j]), default=-1)
        options = [c.index for c in met[j] if c.index > floor and c.index not in used]
        if not options and not first:
            why = _why_unplaced(j, steps, required[j], chosen, met[j], floor)
            first.append(found.late.get(j, why))
        for index in options:
            tries += 1
            if tries > SEARCH_LIMIT:
                return False
            chosen[j] = index
            used.add(index)
            if place(j + 1):
                return True
            used.discard(index)
            del chosen[j]
        return False

    if place(0):
        found.placed = dict(chosen)
        return None
    return first[0] if first else "the steps could not be placed in an allowed order"


def _why_unplaced(
    j: int,
    steps: list[ExpectedCall],
    required: list[int],
    chosen: dict[int, int],
    met: list[ToolCallRecord],
    floor: int,
) -> str:
    if any(c.index > floor for c in met):
        return f"step {j} ({steps[j].label}) has no call of its own: another step used it"
    before = max(required, key=lambda i: chosen[i])
    return f"step {j} ({steps[j].label}) came before step {before} ({steps[before].label})"


def find(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    schema_problem: SchemaProblem,
    schemas: Mapping[str, dict[str, Any]] | None = None,
) -> Findings:
    """Every step's calls and the first problem of each kind (see the module doc); `schemas`
    are the tools' input schemas, by name."""
    found = Findings()
    for j in range(len(scenario.expect)):
        _meet(j, scenario.expect, calls, found, schema_problem, schemas or {})
    assign_blame(scenario.expect, found)
    if found.params is None and found.sequence is None and found.failed is None:
        found.sequence = _place(scenario, found)
    return found


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
