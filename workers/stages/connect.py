"""The session's stages on one connection (`on_connection`): connect, set up, shape the tool
list, converse, probe; with their parts: which servers a trial attaches, the tool list the
model is shown (shaped after the setup, from what the servers list then), and what the
connection saw, kept however the session ends."""

from __future__ import annotations

from typing import Any

import anyio

from mcp_farm.scenarios import server_catalog, servers_for
from mcp_farm.schema import Scenario, ServerDef, TrialSpec
from mcp_farm.schema.specs import DISTRACTOR_SERVER
from mcp_farm.workers.mcp.capture import Capture
from mcp_farm.workers.mcp.connections import Connected, connect
from mcp_farm.workers.mcp.pool import ServerPool
from mcp_farm.workers.mcp.probes import run_probes
from mcp_farm.workers.mcp.toollist import needs_distractors, shape_tools
from mcp_farm.workers.model.adapters import ModelClient
from mcp_farm.workers.model.encode import with_annotations
from mcp_farm.workers.selection import Selector
from mcp_farm.workers.session import SessionState, run_setup
from mcp_farm.workers.stages.drivers import Driver


async def on_connection(
    state: SessionState,
    spec: TrialSpec,
    scenario: Scenario,
    client: ModelClient,
    pool: ServerPool,
    capture: Capture | None,
    driver: Driver,
) -> dict[str, dict[str, Any]]:
    """Connect, set up, shape the tool list, converse, probe; what the connection saw is kept
    however it ends (`kept`), and the capture saved. Returns the tools' input schemas."""
    schemas: dict[str, dict[str, Any]] = {}
    servers = attached(spec, scenario)
    naming, chars = spec.prompt.tool_naming, spec.result_chars
    try:
        async with connect(servers, pool, naming, chars, capture, state.clock) as conn:
            try:
                await run_setup(state, scenario.setup, conn, pool.start_timeout_s)
                schemas.update(await shape_tool_list(state, spec, scenario, conn))
                await driver.converse(state, spec, scenario, client, conn)
                # What the world became, read where the model never sees it (docs/state.md).
                state.probes = await run_probes(scenario.state, conn, None)
            finally:
                schemas.update(kept(state, conn))
    finally:
        await saved(capture)
    return schemas


def attached(spec: TrialSpec, scenario: Scenario) -> list[ServerDef]:
    """The servers a trial attaches: its tool set's, or the scenario's own."""
    catalog = servers_for(spec.scenario.suite)
    names = spec.toolset.servers if spec.toolset else scenario.servers
    servers = [catalog[name] for name in names]
    if spec.tool_list is not None and needs_distractors(spec.tool_list):
        servers.append(server_catalog()[DISTRACTOR_SERVER])
    return servers


async def shape_tool_list(
    state: SessionState, spec: TrialSpec, scenario: Scenario, conn: Connected
) -> dict[str, dict[str, Any]]:
    """Make the tool list the model is shown from what the servers list after the setup (every
    touched server is listed again): the tool-list level, the annotations and the selection.
    Returns the listed tools' input schemas."""
    if spec.tool_list is not None:
        level, expected = spec.tool_list, scenario.expected_tools
        state.tool_positions = await shape_tools(conn, level, spec.seed, scenario.id, expected)
    schemas = {t.tool: t.input_schema for t in conn.tools.values()}
    state.destructive = frozenset(t.tool for t in conn.tools.values() if t.destructive)
    state.read_only = frozenset(t.tool for t in conn.tools.values() if t.read_only)
    if spec.prompt.show_annotations:
        conn.tools.update({k: with_annotations(t) for k, t in conn.tools.items()})
    if spec.prompt.select is not None:
        # After the annotations: the tools a selection shows carry them too.
        conn.selector = Selector(
            spec.prompt.select, dict(conn.tools), seed=spec.seed, clock=state.clock
        )
    return schemas


def kept(state: SessionState, conn: Connected) -> dict[str, dict[str, Any]]:
    """What the connection saw, kept in `state` for the record; returns the input schemas of the
    tools listed now (tools listed mid-session, a tool-list change, are graded by theirs too)."""
    state.left_cassette = conn.left_cassette
    state.server_tools = conn.listed
    state.server_starts = conn.starts
    state.selection_recall = conn.selector.recalls if conn.selector else None
    state.selections = conn.selector.turns if conn.selector else None
    state.elicitations = conn.asked.exchanges
    return {t.tool: t.input_schema for t in conn.tools.values()}


async def saved(capture: Capture | None) -> None:
    """Write the trial's capture, if it has one, whatever ended the session: what was exchanged
    before a timeout or a failure was exchanged all the same."""
    if capture is not None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(capture.save)
