"""Task `farm.check_calls`: what `farm scenarios validate` cannot check without the workers.

Each step's example call is judged by the step's own matchers (the grader's code), and each
server the suites attach is started once, the way a trial starts it, to list its tools; the
suites' tool names and matcher shapes are then checked against those lists
(mcp_farm.scenarios.tool_checks), each `from_key` against what its source step's example
call answers (mcp_farm.workers.mcp.keyprobe), and each tool-list `trigger:` and `elicit`
`field:` against what the servers do when the ideal agent's calls are made
(mcp_farm.workers.walk). A server that cannot start is one problem, not a
traceback.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio

from mcp_farm.scenarios import (
    sandbox_source,
    server_catalog,
)
from mcp_farm.scenarios.tool_checks import tool_problems, unlisted_steps
from mcp_farm.schema import (
    Scenario,
    ServerDef,
    Settings,
    Suite,
    fill_placeholders,
)
from mcp_farm.schema.tasks.messages import (
    CallCheckRequest,
    CallCheckResult,
    SpecProblem,
    SuiteToCheck,
    read_message,
)
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.grading.examples import example_problems
from mcp_farm.workers.mcp.pool import (
    REPO_ROOT,
    ServerPool,
)
from mcp_farm.workers.walk import ToolLists, later_lists, probe_problems

STARTS_AT_ONCE = 4
"""Servers started side by side: most of a start is waiting on a process's imports."""

THIRD_PARTY = REPO_ROOT / ".tools"
"""Where `bash scripts/setup.sh --dev` installs the third-party servers."""

SKIP_HINT = "or pass --no-servers to skip starting servers"


def check_calls(
    payload: CallCheckRequest | dict[str, Any], settings: Settings, **_options: Any
) -> CallCheckResult:
    """Task `farm.check_calls`. It runs its own event loop: call it outside one (the CLI)."""
    request = read_message("farm.check_calls", payload, CallCheckRequest)
    used = [(each, _attached(each.suite)) for each in request.suites]
    servers: dict[str, ServerDef] = {}
    if request.start_servers:
        for _each, attached in used:
            servers.update({_key(s): s for s in attached.values()})
    root = settings.data_dir / "validate"
    tools, failed, noisy = anyio.run(_list_all, servers, root, settings.server_start_timeout_s)
    if request.start_servers:
        # Only servers that started are probed; the others are reported below.
        working = [(e, {n: s for n, s in a.items() if _key(s) not in failed}) for e, a in used]
        probed = probe_problems(working, root, settings.server_start_timeout_s)
        later = later_lists(_unlisted(working, tools), root, settings.server_start_timeout_s)
    else:
        probed, later = [], {}
    if not failed:
        shutil.rmtree(root, ignore_errors=True)  # else its servers.log holds their stderr
    problems: list[SpecProblem] = []
    notes: list[SpecProblem] = []
    reported: set[str] = set()  # servers whose failure is reported: once, where first used
    for each, attached in used:
        for name, server in attached.items():
            if _key(server) in noisy and _key(server) not in reported:
                reported.add(_key(server))
                field = _first_use(each.suite, name)
                notes.append(
                    SpecProblem(source=each.source, field=field, problem=noisy[_key(server)])
                )
        problems += [
            SpecProblem(source=each.source, field=field, problem=problem)
            for i, scenario in enumerate(each.suite.scenarios)
            for field, problem in example_problems(
                scenario, f"scenarios[{i}]", _schemas(scenario.servers, attached, tools)
            )
        ]
        if request.start_servers:
            problems += _tool_problems(each, attached, tools, failed, reported, later)
    return CallCheckResult(problems=problems + probed, servers_started=len(tools), notes=notes)


def tool_schemas(suite: Suite, names: list[str], settings: Settings) -> dict[str, dict[str, Any]]:
    """The input schema of each tool the named servers of the suite list, by tool name: the
    servers are started the way validate starts them (a server that cannot start lists none).
    Runs its own event loop: call it outside one."""
    attached = {n: s for n, s in _attached(suite).items() if n in names}
    servers = {_key(s): s for s in attached.values()}
    root = settings.data_dir / "schemas"
    tools, _failed, _noisy = anyio.run(_list_all, servers, root, settings.server_start_timeout_s)
    return _schemas(names, attached, tools)


def _unlisted(
    working: list[tuple[SuiteToCheck, dict[str, ServerDef]]],
    tools: dict[str, dict[str, dict[str, Any]]],
) -> list[tuple[str, int, Scenario, list[ServerDef]]]:
    """Each scenario (source, index, scenario, its servers) whose steps name a tool its started
    servers do not list at the start: validate walks its ideal agent to see whether its own
    calls bring the tool (mcp_farm.workers.walk.later_lists)."""
    todo = []
    for each, attached in working:
        listed = {name: tools[_key(s)] for name, s in attached.items() if _key(s) in tools}
        for i, scenario in enumerate(each.suite.scenarios):
            if all(n in attached for n in scenario.servers) and unlisted_steps(scenario, listed):
                todo.append((each.source, i, scenario, [attached[n] for n in scenario.servers]))
    return todo


def _tool_problems(
    each: SuiteToCheck,
    attached: dict[str, ServerDef],
    tools: dict[str, dict[str, dict[str, Any]]],
    failed: dict[str, str],
    reported: set[str],
    later: dict[tuple[str, int], ToolLists],
) -> list[SpecProblem]:
    """The suite's servers that did not start (those not reported yet), then its tools and
    matchers checked against the lists of those that did (with, per scenario, the tools its
    own calls brought: `later`)."""
    problems = []
    for name, server in attached.items():
        key = _key(server)
        if key in failed and key not in reported:
            reported.add(key)
            field = _first_use(each.suite, name)
            problems.append(SpecProblem(source=each.source, field=field, problem=failed[key]))
    listed = {name: tools[_key(s)] for name, s in attached.items() if _key(s) in tools}
    return problems + [
        SpecProblem(source=p.source, field=p.field, problem=p.problem)
        for p in tool_problems(
            each.suite,
            each.source,
            listed,
            {i: lists for (source, i), lists in later.items() if source == each.source},
        )
    ]


def _schemas(
    names: list[str], attached: dict[str, ServerDef], tools: dict[str, dict[str, dict[str, Any]]]
) -> dict[str, dict[str, Any]]:
    """The input schemas of the tools the named servers listed (none where not started)."""
    keys = [_key(attached[n]) for n in names if n in attached]
    return {tool: schema for key in keys for tool, schema in tools.get(key, {}).items()}


def _key(server: ServerDef) -> str:
    return server.model_dump_json()


def _attached(suite: Suite) -> dict[str, ServerDef]:
    """The known servers that the suite's named-tool scenarios attach, by name; not those
    whose sandbox folder is missing (reported where the suite is loaded)."""
    known = {**server_catalog(), **{s.name: s for s in suite.servers}}
    names = {n for s in suite.scenarios if not s.open_tools for n in s.servers if n in known}
    return {name: known[name] for name in sorted(names) if _startable(known[name])}


def _startable(server: ServerDef) -> bool:
    folder = sandbox_source(server)
    try:
        return folder is None or folder.is_dir()
    except (OSError, ValueError):  # a name the OS refuses
        return False


def _first_use(suite: Suite, name: str) -> str:
    """Where a server that failed is reported: its definition in the suite, or the first
    scenario that attaches it."""
    for k, server in enumerate(suite.servers):
        if server.name == name:
            return f"servers[{k}]"
    for i, scenario in enumerate(suite.scenarios):
        if name in scenario.servers:
            return f"scenarios[{i}].servers[{scenario.servers.index(name)}]"
    return ""


def _not_installed(server: ServerDef) -> str | None:
    """A path under .tools/ that the server's command runs and that is not there."""
    for arg in server.command or []:
        path = Path(fill_placeholders(arg, {"root": str(REPO_ROOT)}))
        if path.is_relative_to(THIRD_PARTY) and not path.exists():
            return (
                f"server {server.name!r} is not installed here ({path} is missing): "
                f"`bash scripts/setup.sh --dev` installs the third-party servers into "
                f".tools/, {SKIP_HINT}"
            )
    return None


async def _list_all(
    servers: dict[str, ServerDef], root: Path, start_timeout_s: float
) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, str], dict[str, str]]:
    """Each server's tools (name → input schema), or why it could not be listed, by key; and
    what a server that listed them wrote to stdout besides MCP messages."""
    tools: dict[str, dict[str, dict[str, Any]]] = {}
    failed: dict[str, str] = {}
    noisy: dict[str, str] = {}
    if not servers:
        return tools, failed, noisy
    limiter = anyio.CapacityLimiter(STARTS_AT_ONCE)
    async with anyio.create_task_group() as keepers:
        pool = ServerPool(keepers, root, start_timeout_s)

        async def list_one(key: str, server: ServerDef) -> None:
            missing = _not_installed(server)
            if missing:
                failed[key] = missing
                return
            async with limiter:
                try:
                    live = await pool.acquire(server, [server.name])
                except (InfraError, OSError) as exc:  # OSError: its sandbox could not be copied
                    said = str(exc) if isinstance(exc, InfraError) else f"{server.name!r}: {exc}"
                    failed[key] = (
                        f"{said}; its tools were not checked: fix its definition, {SKIP_HINT}"
                    )
                    return
            tools[key] = {t.name: dict(t.input_schema or {}) for t in live.tools}
            if live.noise is not None and live.noise.lines:
                noisy[key] = f"server {server.name!r} works, but {live.noise.said()}"
            pool.release(live, healthy=False)  # stopped: nothing else will use it

        try:
            async with anyio.create_task_group() as starting:
                for key, server in servers.items():
                    starting.start_soon(list_one, key, server)
        finally:
            # Inside the keepers' group: a shared process (a cassette served over HTTP) is
            # owned by a keeper that runs until the pool stops it, so the group would wait
            # on it forever if the pool were closed after the group.
            pool.close()
    return tools, failed, noisy
