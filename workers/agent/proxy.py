"""The recording proxy: a trial's connected servers served to an agent over streamable HTTP.

Per trial, the worker serves what it would show a model (the shaped, selected tool list under
the names the model would see) at one URL per attached server on 127.0.0.1, from inside its own
process. Every `tools/call` goes through the farm's own call path (`session.execute`), so each
call is recorded, captured and graded as a model's call through the farm's loop is.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from starlette.applications import Starlette
from starlette.routing import Mount

from mcp_farm.schema import Scenario
from mcp_farm.schema.specs import DISTRACTOR_SERVER
from mcp_farm.workers.grading.counting import repeats_allowed
from mcp_farm.workers.mcp.connections import Connected
from mcp_farm.workers.mcp.relist import relist
from mcp_farm.workers.model.safejson import arguments_key
from mcp_farm.workers.model.toolspec import ParsedCall
from mcp_farm.workers.session import SessionState, execute, failure_text

HOST = "127.0.0.1"

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
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    seen: dict[str, int] = field(default_factory=dict)


def endpoint_of(server: str) -> str:
    return NEUTRAL_NAME if server == DISTRACTOR_SERVER else server


def _listing(conn: Connected, endpoint: str) -> list[types.Tool]:
    return [
        types.Tool(name=name, description=spec.description, input_schema=spec.input_schema)
        for name, spec in conn.tools.items()
        if endpoint_of(spec.server) == endpoint
    ]


def _server(endpoint: str, rec: Recorder) -> Server[Any]:
    async def list_tools(
        _ctx: Any, _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # A server's list that changed mid-session is listed again, as the farm's loop does.
        async with rec.lock:
            await relist(rec.conn)
        return types.ListToolsResult(tools=_listing(rec.conn, endpoint))

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        # One call at a time: each gets the next index, as the farm's loop gives them.
        async with rec.lock:
            index = len(rec.state.calls)
            call = ParsedCall(call_id=f"agent_{index}", name=params.name, arguments=arguments)
            record = await execute(call, index, rec.conn)
            rec.state.calls.append(record)
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
    return Server(
        f"farm-{endpoint}",
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


class _Quiet(uvicorn.Server):
    """uvicorn without its signal handlers: the worker's own stay in charge."""

    def capture_signals(self) -> Any:
        from contextlib import nullcontext

        return nullcontext()


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
        config = uvicorn.Config(
            Starlette(routes=mounts),
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        web = _Quiet(config)
        async with anyio.create_task_group() as tg:
            tg.start_soon(web.serve, [sock])
            with anyio.fail_after(10):
                while not web.started:
                    await anyio.sleep(0.01)
            try:
                yield {e: f"http://{HOST}:{port}/{e}/mcp" for e in endpoints}
            finally:
                web.should_exit = True


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
