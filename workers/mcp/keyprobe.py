"""Validate's probe of `from_key`: does the step a key is read from answer JSON that holds it?

A `from_key` on a result that is not JSON (a server printing a Python repr) can never pick a
value, so every trial would fail the step whatever the model did. Only a call shows what a
tool answers: for each scenario with a `from_key`, its servers are borrowed as a trial
borrows them, its setup is made, and the ideal agent's calls (each step's `example`) are
made in order up to the last step a key is read from. A step without an example, or an
example call that fails, ends the probe of that scenario quietly: the examples are judged on
their own elsewhere. `mcp_farm.workers.walk.probe_problems` runs it over the suites.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import MCPError
from mcp.types import CallToolResult

from mcp_farm.schema import (
    ExpectedCall,
    ParamMatcher,
    Scenario,
    ServerDef,
    canonical_json,
)
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.grading.chained import key_problem
from mcp_farm.workers.mcp.connections import (
    Connected,
    connect,
    result_text,
)
from mcp_farm.workers.mcp.pool import ServerPool
from mcp_farm.workers.session import (
    SessionState,
    run_setup,
)

Keyed = tuple[str, int, str]
"""(field of the `from_key`, the step it reads, the key)."""


@dataclass
class KeySource:
    """A list of steps that `from_key`s read, with what must be called before it."""

    before: list[ExpectedCall]
    """Steps made first, in order: in a conversation, each earlier turn's (its first route)."""
    steps: list[ExpectedCall]
    """The list the keys' `derived_from_step` indexes."""
    keys: list[Keyed] = field(default_factory=list)
    """Every `from_key` that reads a step of this list."""


def _lists(scenario: Scenario) -> list[tuple[int, int, str, list[ExpectedCall]]]:
    """(turn, index among that turn's lists, field, steps) for each list of steps; a
    one-prompt scenario's are its one turn's, a simulated user's hold for its whole talk."""
    if not scenario.dialogue():
        return [(0, k, at, steps) for k, (at, steps) in enumerate(scenario.step_lists())]
    return [
        (t, k, f"{scenario.turn_field(t)}{at}", steps)
        for t in range(len(scenario.dialogue()))
        for k, (at, steps) in enumerate(scenario.turn_scenario(t).step_lists())
    ]


def keyed(scenario: Scenario, where: str) -> list[KeySource]:
    """Every `from_key` with its field, by the list of steps it reads: its own list
    (`expect`, or a route's), or, with `from_turn: t`, turn t's steps (its first route, the
    one the farm makes itself after a failed turn), made after the turns before t."""
    lists = _lists(scenario)
    first = {turn: steps for turn, k, _at, steps in lists if k == 0}
    sources: dict[tuple[int, int], KeySource] = {}
    for turn, k, at, steps in lists:
        for field_, m in _from_keys(steps, f"{where}.{at}"):
            assert m.from_key is not None and m.derived_from_step is not None
            read = (turn, k) if m.from_turn is None else (m.from_turn, 0)
            if read not in sources:
                source = steps if m.from_turn is None else first.get(m.from_turn, [])
                sources[read] = KeySource(_before(first, read[0]), source)
            sources[read].keys.append((field_, m.derived_from_step, m.from_key))
    return list(sources.values())


def _from_keys(steps: list[ExpectedCall], at: str) -> list[tuple[str, ParamMatcher]]:
    """(field, matcher) for every `from_key` matcher in the steps' params."""
    return [
        (f"{at}[{j}].{block}.{arg}{below}.from_key", m)
        for j, step in enumerate(steps)
        for block, params in _blocks(step)
        for arg, matcher in params.items()
        for below, m in matcher.nested()
        if m.from_key is not None and m.derived_from_step is not None
    ]


def _before(first: dict[int, list[ExpectedCall]], turn: int) -> list[ExpectedCall]:
    """The steps of every turn before `turn` (each turn's first route), in order."""
    return [step for t in range(turn) for step in first.get(t, [])]


def _blocks(step: ExpectedCall) -> list[tuple[str, dict[str, Any]]]:
    """The step's params blocks with their fields: shared, and each alternative's own."""
    blocks: list[tuple[str, dict[str, Any]]] = [("params", step.params)]
    if not isinstance(step.tool, str):
        for n, name in enumerate(step.names):
            own = step.tool.own_params(name)
            if own is not None:
                blocks.append((f"tool.one_of[{n}].params", own))
    return blocks


async def probe(
    scenario: Scenario, where: str, servers: list[ServerDef], pool: ServerPool
) -> list[tuple[str, str]]:
    """(field, problem) for each `from_key` whose source step's example call answered a
    result the key picks nothing in."""
    problems = []
    for source in keyed(scenario, where):
        last = max(k for _f, k, _key in source.keys)
        results = await _ideal_results(scenario, source, last, servers, pool)
        for field_, step, key in source.keys:
            if step in results and (problem := _key_problem(results[step], key)):
                tool = source.steps[step].names[0]
                problems.append(
                    (field_, f"the result of step {step}'s example call ({tool}) {problem}")
                )
    return problems


async def _ideal_results(
    scenario: Scenario,
    source: KeySource,
    last: int,
    servers: list[ServerDef],
    pool: ServerPool,
) -> dict[int, list[str]]:
    """The text (and structured content) each example call of the source's steps 0..last
    answered, on servers as a trial gets them (sandboxes fresh, reset calls made) after the
    scenario's setup and the calls made before the list; only the steps reached before one
    could not be made."""
    results: dict[int, list[str]] = {}
    try:
        async with connect(servers, pool, "plain") as conn:
            await run_setup(SessionState(), scenario.setup, conn, pool.start_timeout_s)
            for step in source.before:
                if await _example_result(step, conn, pool.start_timeout_s) is None:
                    return results
            for j, step in enumerate(source.steps[: last + 1]):
                text = await _example_result(step, conn, pool.start_timeout_s)
                if text is None:
                    break
                results[j] = text
    except (InfraError, OSError):  # a server that does not start is reported by the listing
        pass
    return results


async def example_call(
    step: ExpectedCall, conn: Connected, timeout_s: float
) -> tuple[str, CallToolResult] | None:
    """The step's example call, made on the server that lists its first tool: that server and
    the result; None when the step has no example, no server lists the tool, or the call
    raised (a protocol error, the time limit, a server gone). Validate's walk makes the same
    calls (mcp_farm.workers.walk)."""
    tool = step.names[0]
    spec = conn.tools.get(tool)
    if step.example is None or spec is None:
        return None
    conn.touched.add(spec.server)
    try:
        with anyio.fail_after(timeout_s):
            result = await conn.call(spec.server, tool, step.example)
    except (MCPError, TimeoutError, InfraError):
        return None
    return spec.server, result


async def _example_result(
    step: ExpectedCall, conn: Connected, timeout_s: float
) -> list[str] | None:
    """What the step's example call answered: its text, and its structured content as JSON
    when it has some; None when it has no example, or it failed."""
    made = await example_call(step, conn, timeout_s)
    if made is None:
        return None
    server, result = made
    text = result_text(result)
    if result.is_error or conn.reported_error(server, text):
        return None
    structured = result.structured_content
    return [text] if structured is None else [text, canonical_json(structured)]


def _key_problem(answers: list[str], key: str) -> str | None:
    """Why the key picks nothing in the text nor in the structured content (the text's
    reason); None when it picks a value in either, as chained matchers read both."""
    problems = [key_problem(answer, key) for answer in answers]
    return None if any(p is None for p in problems) else problems[0]
