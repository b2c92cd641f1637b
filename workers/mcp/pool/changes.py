"""A server's tool-list changes, counted: from its notifications, or at 2026-07-28 from a `subscriptions/listen` stream."""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from mcp import ClientSession, MCPError
from mcp.client.subscriptions import Subscription, SubscriptionLost, ToolsListChanged, listen
from mcp.types import ToolListChangedNotification

from mcp_farm.workers.errors import InfraError

logger = logging.getLogger(__name__)


@dataclass
class ListChanges:
    """Counts a server's `notifications/tools/list_changed`: a trial lists the tools again
    when the count moves (workers/mcp/relist.py)."""

    seen: int = 0
    arrived: anyio.Event = field(default_factory=anyio.Event)
    """Set by the first notification since `expect()`."""

    def expect(self) -> None:
        """Wait for a change from now on (before the farm makes a call that causes one)."""
        self.arrived = anyio.Event()

    def note(self) -> None:
        """One change announced (a notification, or an event on a listen stream)."""
        self.seen += 1
        self.arrived.set()

    async def __call__(self, message: object) -> None:
        if isinstance(message, ToolListChangedNotification):
            self.note()
        await anyio.lowlevel.checkpoint()


@asynccontextmanager
async def follow_changes(
    session: ClientSession, changes: ListChanges, limit_s: float
) -> AsyncIterator[None]:
    """At 2026-07-28, hear the server's tool-list changes: a server announces them only on a
    `subscriptions/listen` stream its client opens, so one is open for the session's life and
    each `ToolsListChanged` event counts as a handshake-era notification does. A handshake-era
    session, or a server that declares no tool-list changes, needs none. The server has
    `limit_s` wall seconds to acknowledge the stream (it answers at once when it serves it)."""
    found = session.discover_result
    tools = found.capabilities.tools if found is not None else None
    if tools is None or not tools.list_changed:
        yield
        return
    opened = False
    # The deadline bounds the acknowledgement only: lifted once the stream is open.
    with anyio.CancelScope(deadline=anyio.current_time() + limit_s) as acked:
        try:
            async with listen(session, tools_list_changed=True) as subscription:
                opened = True
                acked.deadline = math.inf
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_hear, subscription, changes)
                    try:
                        yield
                    finally:
                        tg.cancel_scope.cancel()
        except MCPError as exc:
            if opened:
                raise
            raise InfraError(
                f"it refused subscriptions/listen for its tool-list changes: {exc}"
            ) from None
    if acked.cancelled_caught and not opened:
        raise InfraError(f"it did not acknowledge subscriptions/listen within {limit_s:g} s")


async def _hear(subscription: Subscription, changes: ListChanges) -> None:
    """Count each tool-list event of a listen stream until the stream ends."""
    try:
        async for event in subscription:
            if isinstance(event, ToolsListChanged):
                changes.note()
    except SubscriptionLost:
        # The server dropped the stream (or the session is going away): a trigger that waits
        # for a change then finds none and says so, naming the server and the call.
        logger.info("a server's subscriptions/listen stream ended without its close")
