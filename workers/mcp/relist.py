"""Following a server's tool-list changes: after `notifications/tools/list_changed` (at
2026-07-28 an event on the `subscriptions/listen` stream workers/mcp/pool/changes.py opens),
list its tools again, so the model sees the new list from its next reply
(docs/conversations.md)."""

from __future__ import annotations

import time

import anyio
from mcp import MCPError
from mcp.types import Tool

from mcp_farm.schema import SetupCall
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.connections import Connected, add_tools, clash, tool_fingerprint

NOTICE_WAIT_S = 10.0
"""How long the farm waits for the notification a trigger call should cause."""


async def relist(conn: Connected) -> bool:
    """List again the tools of every server that announced a change since the last look;
    whether the tools offered changed. Tools gone are noted in `conn.removed`, new ones in
    `conn.added`."""
    changed = False
    for server, changes in conn.changes.items():
        if changes.seen == conn.relisted.get(server, 0):
            continue
        conn.relisted[server] = changes.seen
        try:
            listed = await conn.sessions[server].list_tools()
        except MCPError as exc:
            raise InfraError(
                f"server {server} changed its tools and then refused tools/list: {exc}"
            ) from None
        was = {n: t for n, t in conn.tools.items() if t.server == server}
        for name in was:
            del conn.tools[name]
        add_tools(conn, server, list(listed.tools))
        if conn.capture is not None:
            conn.capture.relisted(server, list(listed.tools))
        now = {n: t for n, t in conn.tools.items() if t.server == server}
        before, after = set(was), set(now)
        for name in before - after:
            conn.removed[name] = server
            conn.added.discard(name)
        for name in after - before:
            conn.added.add(name)
            conn.removed.pop(name, None)
        changed = changed or was != now  # a description or schema may change too
    return changed


async def list_again(conn: Connected, servers: set[str], timeout_s: float) -> None:
    """List the tools of `servers` (those a reset or setup call went to) again and make that
    the trial's starting list: the model's, the recorded one and the cassette's. A server's
    state may belong to its process, not to the session (a shared process another session
    left on another plan), and the list change its reset causes may be announced after the
    trial first looks (at 2026-07-28, on a separate listen stream): what the server lists now
    is where the trial starts, never a change during it. Each has `timeout_s` to answer;
    InfraError if one does not, or refuses."""
    fresh: dict[str, list[Tool]] = {}
    for server in [s for s in conn.sessions if s in servers]:  # in the order they are attached
        changes = conn.changes.get(server)
        if changes is not None:  # a change announced before this listing is in it
            conn.relisted[server] = changes.seen
        where = f"server {server} after its reset and the scenario's setup"
        try:
            with anyio.move_on_after(timeout_s) as scope:
                fresh[server] = list((await conn.sessions[server].list_tools()).tools)
        except MCPError as exc:
            raise InfraError(f"{where} refused tools/list: {exc}") from None
        if scope.cancelled_caught:
            raise InfraError(f"{where} gave no answer to tools/list within {timeout_s:g} s")
    if fresh:
        _start_from(conn, fresh)


def _start_from(conn: Connected, fresh: dict[str, list[Tool]]) -> None:
    """`conn.tools` with the `fresh` lists in place of those servers' tools, each server's
    tools where they were in the list."""
    was, conn.tools = conn.tools, {}
    for server in conn.sessions:
        if server in fresh:
            add_tools(conn, server, fresh[server])
            conn.listed[server] = {t.name: tool_fingerprint(t) for t in fresh[server]}
            if conn.capture is not None:
                conn.capture.started(server, fresh[server])
            continue
        for name, spec in was.items():
            if spec.server != server:
                continue
            if name in conn.tools:
                raise clash(name, conn.tools[name].server, server)
            conn.tools[name] = spec


async def trigger_change(conn: Connected, server: str, call: SetupCall, label: str) -> None:
    """Make a turn's trigger call and wait (bounded) for the tool-list change it announces;
    InfraError when the call fails or no notification comes: the scenario could not be set
    up, which is never the model's fault."""
    changes = conn.changes[server]
    changes.expect()
    conn.touched.add(server)
    started = time.perf_counter()
    try:
        result = await conn.call(server, call.tool, call.arguments)
    except MCPError as exc:
        raise InfraError(f"{label} {server}.{call.tool} failed: {exc}") from None
    if conn.capture is not None:  # a cassette must answer the trigger too, and change then
        latency = time.perf_counter() - started
        conn.capture.called(
            server, call.tool, call.arguments, result, latency, conn.asked.exchanges
        )
    if result.is_error:
        raise InfraError(f"{label} {server}.{call.tool} failed: {result.content}")
    with anyio.move_on_after(NOTICE_WAIT_S):
        await changes.arrived.wait()
    if not changes.arrived.is_set():
        raise InfraError(
            f"{label} {server}.{call.tool} announced no tool-list change within "
            f"{NOTICE_WAIT_S:g} s (notifications/tools/list_changed, or at 2026-07-28 an "
            "event on the subscriptions/listen stream)"
        )
    # The model's next reply lists the tools again (session.reply_loop), and in a text mode
    # shows the new list in the system message.
