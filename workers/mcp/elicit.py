"""Answering a server's elicitation requests as the scripted user: every pooled session has one
`ElicitHolder`, which a trial points at its own `Asked` when it leases the session, so a session
reused across trials always answers from the current trial's script (docs/conversations.md)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.client.session import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult, ErrorData

from mcp_farm.schema import (
    ElicitAnswer,
    Elicitation,
    PatternTimeout,
    budgeted_search,
)
from mcp_farm.workers.grading.schemacheck import schema_error
from mcp_farm.workers.model.safejson import shorten

INVALID_PARAMS = -32602
"""JSON-RPC "invalid params": what the server is told when the scenario's answer cannot be
sent (the trial is then an infra_error, see `Asked.problem`)."""


def _matches(entry: ElicitAnswer, message: str, schema: dict[str, Any]) -> bool:
    """Whether an `elicit` entry answers a request: its `message` pattern is found in the
    request's message and its `field` is a property the request's schema asks for."""
    if entry.field is not None and entry.field not in (schema.get("properties") or {}):
        return False
    if entry.message is None:
        return True
    return budgeted_search(entry.message, message, field="elicit.message", flags=re.I) is not None


@dataclass
class Asked:
    """One trial's elicitation script and its record, shared by all the sessions it leases."""

    script: list[ElicitAnswer] = field(default_factory=list)
    """The entries that answer requests now: the current turn's, then the scenario's."""
    turn: int = 0
    turn_entries: int = 0
    """How many of `script`'s first entries are the current turn's own (the rest are the
    scenario's): where an entry is named in a message."""
    call: int | None = None
    """The model's call being made (its index in the trial's calls); None for a farm call."""
    exchanges: list[Elicitation] = field(default_factory=list)
    problem: str = ""
    """Why a scripted answer could not be sent (content that does not fit the request's
    schema): the scenario's error, raised as InfraError once the call returns."""
    forward: Callable[[str, ElicitRequestParams], Awaitable[ElicitResult]] | None = None
    """Set while an agent that handles elicitation itself makes a call: the request goes to it
    (and is recorded there), not to the script (workers/agent/proxy.py)."""

    def answer(self, server: str, params: ElicitRequestParams) -> ElicitResult | ErrorData:
        """The scripted user's answer to one request, recorded; a URL-mode request or one no
        entry matches is declined and recorded as unscripted."""
        mode = getattr(params, "mode", "form") or "form"
        schema: dict[str, Any] = dict(getattr(params, "requested_schema", None) or {})
        record = Elicitation(
            turn=self.turn,
            call=self.call,
            server=server,
            message=params.message,
            requested_schema=schema,
            mode="url" if mode == "url" else "form",
            action="decline",
            scripted=False,
        )
        try:
            entry = next(
                (e for e in self.script if mode == "form" and _matches(e, params.message, schema)),
                None,
            )
        except PatternTimeout as exc:
            self.problem = f"elicitation from {server}: {exc}"
            self.exchanges.append(record)
            return ErrorData(code=INVALID_PARAMS, message="the scenario cannot answer this")
        if entry is not None:
            record = record.model_copy(
                update={"action": entry.action, "content": entry.content, "scripted": True}
            )
            wrong = schema_error(entry.content, schema) if entry.content is not None else None
            if wrong is not None:
                self.problem = (
                    f"the `elicit` entry {_named(entry)} ({self._where(entry)}) answering "
                    f"{server}'s request {shorten(params.message)} does not fit the requested "
                    f"schema: {wrong.message}"
                )
                self.exchanges.append(record)
                return ErrorData(code=INVALID_PARAMS, message="the scenario cannot answer this")
        self.exchanges.append(record)
        return ElicitResult(action=record.action, content=record.content)

    def _where(self, entry: ElicitAnswer) -> str:
        """Which list the entry is in, and its index there: `script` holds the current turn's
        entries first, then the scenario's (`turn_entries` of them are the turn's)."""
        k = next(i for i, e in enumerate(self.script) if e is entry)
        if k < self.turn_entries:
            return f"turns[{self.turn}].elicit[{k}]"
        return f"elicit[{k - self.turn_entries}]"


def _named(entry: ElicitAnswer) -> str:
    """An entry as the author wrote it: its `field` or `message`, and its action."""
    said = f"field: {entry.field}" if entry.field else f"message: {shorten(entry.message or '')}"
    return f"{{{said}, action: {entry.action}}}"


@dataclass
class ElicitHolder:
    """A pooled session's elicitation callback: answers from the trial that holds the session
    (`asked`), and declines any request that comes while no trial does."""

    server: str
    asked: Asked | None = None

    async def __call__(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        await anyio.lowlevel.checkpoint()
        if self.asked is None:
            return ElicitResult(action="decline")
        if self.asked.forward is not None:
            return await self.asked.forward(self.server, params)
        return self.asked.answer(self.server, params)
