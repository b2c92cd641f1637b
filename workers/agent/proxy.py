"""The recording proxy: a trial's connected servers served to an agent over streamable HTTP.

Per trial, the worker serves what it would show a model (the shaped, selected tool list under
the names the model would see) at one URL per attached server on 127.0.0.1, from inside its own
process. Every `tools/call` goes through the farm's own call path (`session.execute`), so each
call is recorded, captured and graded as a model's call through the farm's loop is. A server's
tool-list change is listed again, as the farm's loop does, and announced to the agent; a
server's elicitation is answered from the scenario's script, or passed on to the agent where
its target says it handles elicitation (docs/agents.md).
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.routing import Mount

from mcp_farm.schema import Elicitation, Scenario
from mcp_farm.schema.specs import DISTRACTOR_SERVER
from mcp_farm.workers.agent.web import served
from mcp_farm.workers.grading.counting import repeats_allowed
from mcp_farm.workers.mcp.connections import Connected
from mcp_farm.workers.mcp.relist import relist
from mcp_farm.workers.model.safejson import arguments_key
from mcp_farm.workers.model.toolspec import ParsedCall
from mcp_farm.workers.session import SessionState, execute, failure_text

HOST = "127.0.0.1"

NOTICE_SEND_S = 5.0
"""How long one agent session may take to accept a tool-list notice before it is dropped."""

NEUTRAL_NAME = "tools"
"""The endpoint that serves a tool-list level's distractors: a name that does not say what
they are (the farm's own name for their server would)."""


@dataclass
class Recorder:
    """What the proxy writes into: the trial's state, and what a call may end."""

    state: SessionState
    conn: Connected
    max_repeats: Callable[[str], int]
    """How often one call (tool and arguments) may be repeated before it is a `tool_loop`."""
    on_loop: Callable[[], None] = lambda: None
    """Called once the agent loops on a call: the turn ends it."""
    elicitation: Literal["script", "agent"] = "script"
    """Who answers a server's elicitation: the scenario's script, or the agent (passed on)."""
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    seen: dict[str, int] = field(default_factory=dict)
    shown: dict[str, list[types.Tool]] = field(default_factory=dict)
    """Per endpoint, the list the agent was last served or told of."""
    agents: dict[str, dict[str, ServerSession]] = field(default_factory=dict)
    """Per endpoint, the agent's handshake-era sessions by their HTTP session id (the latest
    request's): where a tool-list change is announced."""
    buses: dict[str, InMemorySubscriptionBus] = field(default_factory=dict)
    """Per endpoint, the events of its `subscriptions/listen` streams (a 2026-07-28 agent)."""


def endpoint_of(server: str) -> str:
    return NEUTRAL_NAME if server == DISTRACTOR_SERVER else server


def _listing(conn: Connected, endpoint: str) -> list[types.Tool]:
    return [
        types.Tool(name=name, description=spec.description, input_schema=spec.input_schema)
        for name, spec in conn.tools.items()
        if endpoint_of(spec.server) == endpoint
    ]


async def announce(rec: Recorder) -> None:
    """List again the tools of each server that announced a change (as the farm's loop does
    before a model's reply: recorded, captured) and tell the agent of each endpoint whose list
    changed, so it lists again: `notifications/tools/list_changed` on its sessions, and the
    event on its `subscriptions/listen` streams."""
    async with rec.lock:
        await _announce(rec)


async def _announce(rec: Recorder) -> None:
    await relist(rec.conn)
    for endpoint, was in rec.shown.items():
        now = _listing(rec.conn, endpoint)
        if now == was:
            continue
        rec.shown[endpoint] = now
        sessions = rec.agents.get(endpoint, {})
        for key, session in list(sessions.items()):
            # A session whose agent is gone (a oneshot process ended, a killed one) is dropped:
            # its stream may be closed, or may never be read again.
            with anyio.move_on_after(NOTICE_SEND_S) as waited:
                try:
                    await session.send_tool_list_changed()
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    del sessions[key]
            if waited.cancelled_caught:
                sessions.pop(key, None)
        await rec.buses[endpoint].publish(ToolsListChanged())


def _heard(rec: Recorder, endpoint: str, ctx: ServerRequestContext[Any]) -> None:
    """Keep the agent's session, to announce list changes on; a 2026-07-28 session hears them
    on its listen stream instead."""
    headers = getattr(ctx.request, "headers", None)  # the HTTP request's, on this transport
    session_id = headers.get("mcp-session-id") if headers is not None else None
    if session_id and ctx.session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        rec.agents.setdefault(endpoint, {})[session_id] = ctx.session


def _ask_agent(rec: Recorder, ctx: ServerRequestContext[Any]) -> Any:
    """The elicitation answerer for the call the agent is making (`Asked.forward`): the
    server's request goes to the agent's session, on the call's own stream, and the agent's
    answer back to the server; request and answer are recorded as the farm's loop records a
    scripted one. An agent that cannot answer (it declared no elicitation) is taken to
    decline, recorded as unscripted."""

    async def ask(server: str, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked = rec.conn.asked
        url = isinstance(params, types.ElicitRequestURLParams)
        schema = {} if isinstance(params, types.ElicitRequestURLParams) else params.requested_schema
        record = Elicitation(
            turn=asked.turn,
            call=asked.call,
            server=server,
            message=params.message,
            requested_schema=dict(schema),
            mode="url" if url else "form",
            action="decline",
            scripted=False,
        )
        wanted = types.ClientCapabilities(elicitation=types.ElicitationCapability())
        if not ctx.session.check_client_capability(wanted):  # it would never answer
            asked.exchanges.append(record)
            return types.ElicitResult(action="decline")
        try:
            if isinstance(params, types.ElicitRequestURLParams):
                answer = await ctx.session.elicit_url(
                    params.message, params.url, params.elicitation_id or "", ctx.request_id
                )
            else:
                answer = await ctx.session.elicit_form(
                    params.message, params.requested_schema, ctx.request_id
                )
        except MCPError:
            asked.exchanges.append(record)
            return types.ElicitResult(action="decline")
        content = dict(answer.content) if answer.content is not None else None
        asked.exchanges.append(
            record.model_copy(
                update={"action": answer.action, "content": content, "scripted": True}
            )
        )
        return answer

    return ask


class _Endpoint(Server[Any]):
    """The proxy's server for one endpoint: it declares that its tool list may change (it
    announces each change of the server behind it)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


def _server(endpoint: str, rec: Recorder) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        _heard(rec, endpoint, ctx)
        # A server's list that changed mid-session is listed again, as the farm's loop does.
        async with rec.lock:
            await _announce(rec)
        return types.ListToolsResult(tools=rec.shown[endpoint])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        _heard(rec, endpoint, ctx)
        arguments = dict(params.arguments or {})
        # A 2026-07-28 session takes no request from the proxy: the script answers then.
        passing = rec.elicitation == "agent" and ctx.session.can_send_request
        # One call at a time: each gets the next index, as the farm's loop gives them.
        async with rec.lock:
            index = len(rec.state.calls)
            call = ParsedCall(call_id=f"agent_{index}", name=params.name, arguments=arguments)
            rec.conn.asked.forward = _ask_agent(rec, ctx) if passing else None
            try:
                record = await execute(call, index, rec.conn)
            finally:
                rec.conn.asked.forward = None
            rec.state.calls.append(record)
            await _announce(rec)  # a change the call caused reaches the agent with its result
            key = arguments_key(params.name, arguments)
            rec.seen[key] = rec.seen.get(key, 0) + 1
            if rec.seen[key] > rec.max_repeats(record.tool):
                rec.state.stop_reason = "tool_loop"
                rec.on_loop()
        text = record.result_text if record.ok else failure_text(record, rec.conn)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=not record.ok
        )

    instructions = rec.conn.instructions.get(endpoint)
    bus = rec.buses.setdefault(endpoint, InMemorySubscriptionBus())
    rec.shown[endpoint] = _listing(rec.conn, endpoint)
    return _Endpoint(
        f"farm-{endpoint}",
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus),
    )


@asynccontextmanager
async def serving(rec: Recorder) -> AsyncIterator[dict[str, str]]:
    """Serve the trial's servers while the context is open; yields each endpoint's URL."""
    endpoints = sorted({endpoint_of(spec.server) for spec in rec.conn.tools.values()})
    endpoints += sorted(
        {endpoint_of(name) for name in rec.conn.sessions} - set(endpoints) - {NEUTRAL_NAME}
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, 0))
    port = sock.getsockname()[1]
    async with AsyncExitStack() as stack:
        stack.callback(sock.close)
        mounts = []
        for endpoint in endpoints:
            server = _server(endpoint, rec)
            server.streamable_http_app(streamable_http_path="/mcp", host=HOST)
            await stack.enter_async_context(server.session_manager.run())
            mounts.append(Mount(f"/{endpoint}", app=StreamableHTTPASGIApp(server.session_manager)))
        async with served(Starlette(routes=mounts), sock):
            yield {e: f"http://{HOST}:{port}/{e}/mcp" for e in endpoints}


BRIDGE = "mcp_farm.scenarios.agents.bridge"
"""The stdio↔HTTP bridge a `servers_as: stdio` config file runs for each server."""


def write_config(folder: Path, urls: dict[str, str], servers_as: str = "http") -> Path:
    """The trial's `mcpServers` config file, as desktop clients and editors read it: each
    server by its proxy URL, or (`stdio`) as a command running the bridge to it."""
    path = folder / "mcp.json"
    servers: dict[str, dict[str, Any]] = {
        name: {"type": "http", "url": url}
        if servers_as == "http"
        else {"command": sys.executable, "args": ["-m", BRIDGE, url]}
        for name, url in urls.items()
    }
    path.write_text(json.dumps({"mcpServers": servers}, indent=2) + "\n", encoding="utf-8")
    return path


def loop_limit(state: SessionState, scenario: Scenario) -> Callable[[str], int]:
    """The repeats a call of `tool` may have in `scenario` before it is a loop."""
    return lambda tool: repeats_allowed(scenario, tool, state.read_only)
