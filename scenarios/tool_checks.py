"""Check a suite against the tools its servers list: every tool a scenario names must be one
its servers offer (a conversation's first tool-list `trigger:` too, and a read-call state
probe's tool), and an array or object matcher must judge an argument the tool takes as one.

Pure: the tool lists come in (`farm scenarios validate` starts the servers to get them);
a server whose list is missing is not judged here. A tool a server lists only after the
scenario's own expected calls changed its list (a plan upgrade) comes in too, per scenario
(`later`: validate's walk finds them, mcp_farm.workers.walk.later_lists), and counts as listed
for the scenario's steps, `allowed_extra` and read-call probes.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from mcp_farm.schema import (
    ExpectedCall,
    ParamMatcher,
    Scenario,
    SpecError,
    Suite,
)

ToolSchemas = Mapping[str, Mapping[str, dict[str, Any]]]
"""Server name → the tools it lists, by name → each tool's input schema."""

SHAPES = {"items": "array", "contains": "array", "keys": "object"}
"""The JSON type each matcher kind judges."""


def tool_problems(
    suite: Suite, source: str, tools: ToolSchemas, later: Mapping[int, ToolSchemas] | None = None
) -> list[SpecError]:
    """Setup calls, steps (every alternative, every route) and `allowed_extra` tools that no
    attached server lists, and matchers whose shape the tool's input schema rules out. `later`:
    per scenario (by index), the tools its servers list only after its expected calls."""
    problems: list[SpecError] = []
    for i, scenario in enumerate(suite.scenarios):
        after = (later or {}).get(i)
        if scenario.open_tools:  # its servers change with the tool set; no tool is named
            continue
        if any(turn.event for turn in scenario.turns):
            # Its tool list changes mid-session: the list at start is not the rule, except
            # for the first trigger, which is called on that list.
            found = _setup_problems(scenario, tools) + _trigger_problems(scenario, tools)
            problems += [SpecError(source, f"scenarios[{i}].{f}", p) for f, p in found]
            continue
        found = _setup_problems(scenario, tools)
        reached = _with(tools, after) if after else tools
        found += _step_problems(scenario, reached) + _extra_problems(scenario, reached)
        found += _probe_problems(scenario, reached)
        problems += [SpecError(source, f"scenarios[{i}].{f}", p) for f, p in found]
    return problems


def _with(tools: ToolSchemas, later: ToolSchemas) -> ToolSchemas:
    """The lists with the tools each server lists later added (a server not started stays
    out: it is not judged)."""
    return {s: {**listed, **later.get(s, {})} for s, listed in tools.items()}


def unlisted_steps(scenario: Scenario, tools: ToolSchemas) -> bool:
    """Whether a step of the scenario names a tool no attached server lists at the start: only
    then is it worth walking the ideal agent's calls to see whether one of them brings it."""
    if scenario.open_tools or any(turn.event for turn in scenario.turns):
        return False
    return any(
        _unlisted(name, [step.server] if step.server else scenario.servers, tools)
        for _at, steps in scenario.step_lists()
        for step in steps
        for name in step.names
    )


def _extra_problems(scenario: Scenario, tools: ToolSchemas) -> list[tuple[str, str]]:
    """The scenario's `allowed_extra` tools and each turn's (a conversation's live on its
    turns) that no attached server lists."""
    lists = [("allowed_extra", scenario.allowed_extra)] + [
        (f"turns[{t}].allowed_extra", turn.allowed_extra) for t, turn in enumerate(scenario.turns)
    ]
    return [
        (f"{at}[{k}]", problem)
        for at, names in lists
        for k, name in enumerate(names)
        if (problem := _unlisted(name, scenario.servers, tools))
    ]


def _probe_problems(scenario: Scenario, tools: ToolSchemas) -> list[tuple[str, str]]:
    """Read-call probes (`state:` of the scenario and of each turn) whose tool no server they
    may look at lists: the probe could never look, and its trials would be infra_errors."""
    places = [(f"turns[{t}].state", turn.state) for t, turn in enumerate(scenario.turns)]
    found = []
    for at, probes in [*places, ("state", scenario.state)]:
        for k, probe in enumerate(probes):
            if probe.tool is None:
                continue
            servers = [probe.server] if probe.server else scenario.servers
            problem = _unlisted(probe.tool, servers, tools)
            if problem:
                found.append((f"{at}[{k}].tool", f"state probe {probe.name}: {problem}"))
    return found


def _setup_problems(scenario: Scenario, tools: ToolSchemas) -> list[tuple[str, str]]:
    found = []
    for k, call in enumerate(scenario.setup):
        if call.server is None and len(scenario.servers) > 1:
            continue  # which server it seeds is a structural problem of its own
        problem = _unlisted(call.tool, [call.server or scenario.servers[0]], tools)
        if problem:
            found.append((f"setup[{k}].tool", problem))
    return found


def _trigger_problems(scenario: Scenario, tools: ToolSchemas) -> list[tuple[str, str]]:
    """The first turn trigger's tool, when no attached server lists it at the start (a later
    trigger may call a tool an earlier change brought, so it is judged at run time only)."""
    for t, turn in enumerate(scenario.turns):
        if turn.trigger is None:
            continue
        call = turn.trigger
        if call.server is None and len(scenario.servers) > 1:
            return []  # which server it calls is a structural problem of its own
        problem = _unlisted(call.tool, [call.server or scenario.servers[0]], tools)
        return [(f"turns[{t}].trigger.tool", problem)] if problem else []
    return []


def _step_problems(scenario: Scenario, tools: ToolSchemas) -> list[tuple[str, str]]:
    found = []
    for at, steps in scenario.step_lists():
        for j, step in enumerate(steps):
            servers = [step.server] if step.server else scenario.servers
            for n, name in enumerate(step.names):
                where = f"{at}[{j}].tool" + ("" if isinstance(step.tool, str) else f".one_of[{n}]")
                problem = _unlisted(name, servers, tools)
                if problem:
                    found.append((where, problem))
                    continue
                schema = next((tools[s][name] for s in servers if name in tools.get(s, {})), None)
                if schema is not None:
                    block = f"{at}[{j}].{_block(step, n, name)}"
                    found += _shape_problems(step.params_for(name), schema, name, block)
    return found


def _block(step: ExpectedCall, n: int, name: str) -> str:
    """The field of the params block that judges a call of `name`, alternative n of the step."""
    own = not isinstance(step.tool, str) and step.tool.own_params(name) is not None
    return f"tool.one_of[{n}].params" if own else "params"


def _unlisted(name: str, servers: list[str], tools: ToolSchemas) -> str | None:
    """Why `name` is not a tool of any of `servers`, when every one of them has its list."""
    if any(s not in tools for s in servers):
        return None  # a server that did not start (reported on its own), or an unknown one
    offered = sorted({tool for s in servers for tool in tools[s]})
    if name in offered:
        return None
    which = " or ".join(servers)
    close = difflib.get_close_matches(name, offered, n=3)
    if close:
        return f"{name!r} is not a tool of {which}; did you mean {', '.join(map(repr, close))}?"
    return f"{name!r} is not a tool of {which}, which list{'s' * (len(servers) == 1)}: " + (
        ", ".join(offered) or "no tools"
    )


def _shape_problems(
    params: dict[str, ParamMatcher], schema: dict[str, Any], tool: str, block: str
) -> list[tuple[str, str]]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return []
    return [
        (f"{block}.{arg}{below}", problem)
        for arg, matcher in params.items()
        for below, problem in _shape(matcher, properties.get(arg), tool, arg)
    ]


def _shape(
    matcher: ParamMatcher, schema: Any, tool: str, arg: str, below: str = ""
) -> list[tuple[str, str]]:
    """(path below the argument, problem) where a matcher judges an array or an object that
    the schema says is something else; schemas without a plain `type` are not judged."""
    while matcher.optional is not None:
        below, matcher = f"{below}.optional", matcher.optional
    if not isinstance(schema, dict):
        return []
    types = schema.get("type")
    types = {types} if isinstance(types, str) else set(types) if isinstance(types, list) else None
    wanted = {SHAPES[k] for k in matcher.kinds if k in SHAPES}
    if types is not None and wanted and not wanted & types:
        kinds = "/".join(f"`{k}`" for k in matcher.kinds)
        said = " or ".join(sorted(str(t) for t in types))
        return [
            (
                below,
                f"{kinds} judges an {wanted.pop()}, but {tool}'s input schema types "
                f"{arg}{below} as {said}: no call could meet it",
            )
        ]
    found = []
    properties = schema.get("properties")
    for key, child in (matcher.keys or {}).items():
        inner = properties.get(key) if isinstance(properties, dict) else None
        found += _shape(child, inner, tool, arg, f"{below}.keys.{key}")
    for name in ("items", "contains"):
        child = getattr(matcher, name)
        if isinstance(child, ParamMatcher):
            found += _shape(child, schema.get("items"), tool, arg, f"{below}.{name}")
    return found
