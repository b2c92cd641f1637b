"""How calls are counted: tool loops, the calls `calls: strict` refuses, first tries.

Each step is done by one call. Under `calls: strict`, every other call of an expected tool is
wrong (a second call that also fits a step done included), and a call identical to an earlier
one is a loop unless it does a step of its own (a task that needs the same call twice makes
it twice). Repeats that change nothing are let be: a copy of a call of a tool its server
marks `readOnlyHint: true`, and any further call that meets an `idempotent` step, or copies
one that did (a server may answer such a copy with an error: "already exists"). `max_repeats`
bounds identical calls in either mode.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcp_farm.schema import (
    Outcome,
    Scenario,
    ToolCallRecord,
)
from mcp_farm.workers.grading.blame import Findings
from mcp_farm.workers.model.safejson import (
    arguments_key,
    shorten,
)


def repeats_allowed(scenario: Scenario, tool: str, read_only: frozenset[str] = frozenset()) -> int:
    """Identical calls of `tool` a session allows before it stops the trial as a tool loop:
    `max_repeats`; under `calls: strict`, no more than the steps of one way that accept the
    tool could each use (at least one), since any further copy is a loop whatever it does,
    unless repeating it changes nothing (`read_only`: the tools marked `readOnlyHint`; or a
    step that accepts it is `idempotent`)."""
    if scenario.calls != "strict" or tool in read_only:
        return scenario.max_repeats
    if any(tool in s.names and s.idempotent for _n, way in scenario.ways() for s in way.expect):
        return scenario.max_repeats
    steps = max(sum(1 for s in way.expect if tool in s.names) for _n, way in scenario.ways())
    return min(scenario.max_repeats, max(1, steps))


def _copies(calls: list[ToolCallRecord]) -> Iterator[tuple[ToolCallRecord, list[ToolCallRecord]]]:
    """Each call with the calls identical to it (same tool and arguments) up to it."""
    seen: dict[str, list[ToolCallRecord]] = {}
    for c in calls:
        copies = seen.setdefault(arguments_key(c.tool, c.arguments), [])
        copies.append(c)
        yield c, copies


def past_limit(calls: list[ToolCallRecord], allowed: int) -> str | None:
    """The first call identical to more than `allowed` calls up to it, in words."""
    for c, copies in _copies(calls):
        if len(copies) > allowed:
            return f"{c.tool} called {len(copies)} times with the same arguments"
    return None


def harmless(
    scenario: Scenario,
    call: ToolCallRecord,
    found: Findings,
    read_only: frozenset[str],
    copies: list[ToolCallRecord] | None = None,
) -> bool:
    """Whether doing this call again changes nothing: its tool is marked read-only, or it (or
    an identical call before it, `copies`) meets an `idempotent` step. A copy is judged by its
    first: a server may answer a repeat that changes nothing with an error ("already
    exists"), which meets no step, and is still the harmless repeat the step allows."""
    if call.server is not None and call.tool in read_only:
        return True
    same = {c.index for c in copies or [call]} | {call.index}
    return any(
        scenario.expect[j].idempotent and any(m.index in same for m in met)
        for j, met in found.met.items()
    )


def loop_problem(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    found: Findings,
    read_only: frozenset[str] = frozenset(),
) -> str | None:
    """Identical calls past `max_repeats`; under `calls: strict`, also a call identical to an
    earlier one that no step could need (more copies than the steps they meet), unless
    repeating it is `harmless`."""
    past = past_limit(calls, scenario.max_repeats)
    if past or scenario.calls != "strict":
        return past
    for c, copies in _copies(calls):
        if harmless(scenario, c, found, read_only, copies):
            continue
        indexes = {copy.index for copy in copies}
        steps = sum(1 for met in found.met.values() if any(m.index in indexes for m in met))
        if len(copies) > max(1, steps):
            return f"calls: strict: call {c.index} ({c.tool}) repeats call {copies[0].index}"
    return None


def extra_call(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    found: Findings,
    read_only: frozenset[str] = frozenset(),
) -> tuple[Outcome, str] | None:
    """Under `calls: strict`, once every step has its one call: the first other call of an
    expected tool (a second call that also fits a step done included) is wrong_params; else
    the first other call identical to an earlier one is a tool_loop. A call that repeats
    harmlessly (`harmless`: a copy, or a step done again) is neither."""
    doing = set(found.placed.values())
    repeat: str | None = None
    for c, copies in _copies(calls):
        if c.index in doing or c.tool not in scenario.accepted_tools:
            continue
        again = [j for j, met in sorted(found.met.items()) if any(m.index == c.index for m in met)]
        if (len(copies) > 1 or again) and harmless(scenario, c, found, read_only, copies):
            continue
        if len(copies) > 1:
            repeat = repeat or f"call {c.index} ({c.tool}) repeats call {copies[0].index}"
            continue
        if again:
            what = f"does step {again[0]} again, done by call {found.placed[again[0]]}"
        else:
            what = "failed" if not c.ok else "matches no step"
        detail = f"calls: strict: call {c.index} ({c.tool}) {what}: {shorten(c.arguments)}"
        return "wrong_params", detail
    if repeat:
        return "tool_loop", f"calls: strict: {repeat}"
    return None


def first_try(scenario: Scenario, calls: list[ToolCallRecord], found: Findings) -> bool:
    """Whether every call of an expected tool did a step of its own, and no other call
    repeated an earlier one."""
    doing = set(found.placed.values())
    return all(
        c.index in doing or (c.tool not in scenario.accepted_tools and len(copies) == 1)
        for c, copies in _copies(calls)
    )
