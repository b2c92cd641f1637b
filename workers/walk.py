"""Validate's walk of a scenario on its real servers: what only the servers can tell.

For each scenario with a tool-list `trigger:` or an `elicit` entry that names a `field:`, its
servers are borrowed as a trial borrows them, its setup is made, and each turn is played as
the ideal agent plays it: the turn's trigger first (as a trial makes it, waiting for the
change it announces), then each step's `example` call of its first route, the servers'
elicitation requests answered from the scenario's own script. Then:

- a trigger that fails, announces no tool-list change, or announces one while its server
  lists the same tools after it, is a problem at `turns[i].trigger`: every trial of the
  scenario would end as an `infra_error` (or change nothing) there;
- an `elicit` entry whose `field:` no request in its reach asks for (the scenario's entries:
  any request; a turn's: that turn's; with `message:`, those its pattern finds) is a problem
  at its `field`, naming the fields the requests asked for. Where no request came in reach
  (the walk stopped before, or the server asks only on some paths), nothing is said.

A step without an example, or an example call that does not go as its step expects, ends the
walk there quietly: the examples are judged on their own elsewhere.

`later_lists` walks the same way for a scenario whose steps name a tool its servers do not
list at the start: where the next step's tool is not listed yet, it waits (bounded) for the
server of the call before to announce a tool-list change and lists its tools again, as a trial
does before the model's next reply. What a server lists after such a change is what the
scenario's own expected calls brought (a plan upgrade), and counts as listed for its steps
(mcp_farm.scenarios.tool_checks).
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import anyio
from mcp.types import CallToolResult

from mcp_farm.schema import (
    ElicitAnswer,
    Elicitation,
    ExpectedCall,
    PatternTimeout,
    Scenario,
    ServerDef,
    SetupCall,
    budgeted_search,
)
from mcp_farm.schema.tasks.messages import SpecProblem, SuiteToCheck
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.connections import Connected, connect, result_text
from mcp_farm.workers.mcp.keyprobe import example_call, keyed, probe
from mcp_farm.workers.mcp.pool import ServerPool
from mcp_farm.workers.mcp.relist import NOTICE_WAIT_S, relist, trigger_change
from mcp_farm.workers.session import SessionState, run_setup, setup_owner


def walked(scenario: Scenario) -> bool:
    """Whether the scenario has anything the walk checks."""
    turns = scenario.dialogue()
    entries = [*scenario.elicit, *(e for t in turns for e in t.elicit)]
    return any(t.trigger is not None for t in turns) or any(e.field for e in entries)


async def walk(
    scenario: Scenario, where: str, servers: list[ServerDef], pool: ServerPool
) -> list[tuple[str, str]]:
    """(field, problem) for the scenario's triggers and `elicit` fields (module docstring)."""
    problems: list[tuple[str, str]] = []
    asked: list[Elicitation] = []
    try:
        async with connect(servers, pool, "plain") as conn:
            await run_setup(SessionState(), scenario.setup, conn, pool.start_timeout_s)
            for i, turn in enumerate(scenario.dialogue()):
                view = scenario.turn_scenario(i)
                conn.asked.turn, conn.asked.script = i, list(view.elicit)
                conn.asked.turn_entries = len(view.elicit) - len(scenario.elicit)
                if turn.event == "tools_changed" and turn.trigger is not None:
                    problem = await _trigger_problem(conn, turn.trigger)
                    if problem:
                        problems.append((f"{where}.{scenario.turn_field(i)}trigger", problem))
                        break
                if not await _played(view.ways()[0][1].expect, conn, pool.start_timeout_s):
                    break
            asked = list(conn.asked.exchanges)
    except (InfraError, OSError):  # a server that does not start is reported by the listing
        pass
    return problems + _field_problems(scenario, where, asked)


async def _trigger_problem(conn: Connected, call: SetupCall) -> str | None:
    """Why the trigger does not change its server's tool list, made as a trial makes it."""
    server = setup_owner(call, conn, "the trigger")
    try:
        await trigger_change(conn, server, call, "the trigger call")
    except InfraError as exc:
        return f"{exc}: every trial of this scenario would end there as an infra_error"
    if not await relist(conn):
        return (
            f"the trigger call {server}.{call.tool} announced a tool-list change, but {server} "
            "lists the same tools after it: `event: tools_changed` changes nothing the model sees"
        )
    return None


async def _played(steps: list[ExpectedCall], conn: Connected, timeout_s: float) -> bool:
    """Make each step's example call in order; whether every one went as its step expects."""
    for step in steps:
        made = await example_call(step, conn, timeout_s)
        if made is None:
            return False
        if not _as_expected(step, conn, *made):
            return False
    return True


def _as_expected(step: ExpectedCall, conn: Connected, server: str, result: CallToolResult) -> bool:
    """Whether a step's example call came back as the step expects: an error, or not."""
    failed = result.is_error or conn.reported_error(server, result_text(result))
    return failed == step.expect_error


def _field_problems(
    scenario: Scenario, where: str, asked: list[Elicitation]
) -> list[tuple[str, str]]:
    """Each `field:` that no request in its entry's reach asked for."""
    entries = [(f"{where}.elicit[{k}]", e, asked) for k, e in enumerate(scenario.elicit)]
    for t, turn in enumerate(scenario.turns):
        own = [a for a in asked if a.turn == t]
        entries += [(f"{where}.turns[{t}].elicit[{k}]", e, own) for k, e in enumerate(turn.elicit)]
    found = []
    for at, entry, requests in entries:
        if entry.field is None:
            continue
        reach = [a for a in requests if a.mode == "form" and _message_fits(entry, a.message)]
        if not reach:
            continue  # no request came where this entry answers: nothing is known
        fields = sorted({f for a in reach for f in (a.requested_schema.get("properties") or {})})
        if entry.field in fields:
            continue
        close = difflib.get_close_matches(entry.field, fields, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        servers = " and ".join(sorted({a.server for a in reach}))
        found.append(
            (
                f"{at}.field",
                f"{entry.field!r} is not a field of any form {servers} asked for while the "
                f"ideal agent's calls ran (they ask for: {', '.join(fields) or 'no fields'})"
                f"{hint}: the entry answers nothing, and each such request is declined",
            )
        )
    return found


def _message_fits(entry: ElicitAnswer, message: str) -> bool:
    if entry.message is None:
        return True
    try:
        return (
            budgeted_search(entry.message, message, field="elicit.message", flags=re.I) is not None
        )
    except PatternTimeout:
        return False  # a pattern past its budget is reported where patterns are checked


def probe_problems(
    suites: list[tuple[SuiteToCheck, dict[str, ServerDef]]], root: Path, start_timeout_s: float
) -> list[SpecProblem]:
    """Every suite's `from_key` problems (mcp_farm.workers.mcp.keyprobe) and walk problems
    (each suite with the servers it attaches, by name), on one pool of servers, so a scenario
    with both starts them once; a scenario whose servers are not all at hand is not probed.
    Runs its own event loop."""
    todo = [
        (each.source, f"scenarios[{i}]", scenario, [attached[n] for n in scenario.servers])
        for each, attached in suites
        for i, scenario in enumerate(each.suite.scenarios)
        if not scenario.open_tools
        and (keyed(scenario, "") or walked(scenario))
        and all(n in attached for n in scenario.servers)
    ]
    if not todo:
        return []
    return anyio.run(_probe_all, todo, root, start_timeout_s)


async def _probe_all(
    todo: list[tuple[str, str, Scenario, list[ServerDef]]], root: Path, start_timeout_s: float
) -> list[SpecProblem]:
    problems: list[SpecProblem] = []
    async with anyio.create_task_group() as keepers:
        pool = ServerPool(keepers, root, start_timeout_s)
        for source, where, scenario, servers in todo:
            found = await probe(scenario, where, servers, pool) if keyed(scenario, "") else []
            if walked(scenario):
                found += await walk(scenario, where, servers, pool)
            problems += [SpecProblem(source=source, field=f, problem=p) for f, p in found]
        pool.close()
    return problems


ToolLists = dict[str, dict[str, dict[str, Any]]]
"""Server name → the tools it lists, by name → input schema (as tool_checks reads them)."""


async def later_tools(scenario: Scenario, servers: list[ServerDef], pool: ServerPool) -> ToolLists:
    """The tools the scenario's servers list only after the ideal agent's calls (each turn's
    first route) changed their lists: see the module docstring."""
    found: ToolLists = {}
    try:
        async with connect(servers, pool, "plain") as conn:
            await run_setup(SessionState(), scenario.setup, conn, pool.start_timeout_s)
            for i in range(len(scenario.dialogue())):
                steps = scenario.turn_scenario(i).ways()[0][1].expect
                if not await _played_relisting(steps, conn, pool.start_timeout_s, found):
                    break
    except (InfraError, OSError):  # a server that does not start is reported by the listing
        pass
    return found


async def _played_relisting(
    steps: list[ExpectedCall], conn: Connected, timeout_s: float, found: ToolLists
) -> bool:
    """`_played`, following the servers' tool-list changes between the calls: the tools each
    change added go into `found`."""
    last: str | None = None
    for step in steps:
        if step.names[0] not in conn.tools and last is not None:
            with anyio.move_on_after(NOTICE_WAIT_S):
                await conn.changes[last].arrived.wait()
        if await relist(conn):
            for name in conn.added:
                spec = conn.tools[name]
                found.setdefault(spec.server, {})[spec.tool] = spec.input_schema
        for changes in conn.changes.values():
            changes.expect()
        made = await example_call(step, conn, timeout_s)
        if made is None:
            return False
        last = made[0]
        if not _as_expected(step, conn, *made):
            return False
    return True


def later_lists(
    todo: list[tuple[str, int, Scenario, list[ServerDef]]], root: Path, start_timeout_s: float
) -> dict[tuple[str, int], ToolLists]:
    """`later_tools` of each (source, scenario index, scenario, its servers), on one pool;
    only the scenarios whose walk found some. Runs its own event loop."""
    if not todo:
        return {}
    return anyio.run(_later_all, todo, root, start_timeout_s)


async def _later_all(
    todo: list[tuple[str, int, Scenario, list[ServerDef]]], root: Path, start_timeout_s: float
) -> dict[tuple[str, int], ToolLists]:
    found: dict[tuple[str, int], ToolLists] = {}
    async with anyio.create_task_group() as keepers:
        pool = ServerPool(keepers, root, start_timeout_s)
        for source, i, scenario, servers in todo:
            if lists := await later_tools(scenario, servers, pool):
                found[(source, i)] = lists
        pool.close()
    return found
