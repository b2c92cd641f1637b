"""Calling a tool on any session the pool opens, following the `input_required` round trip a
2026-07-28 server may answer with, so its questions reach the same scripted user as an
`elicitation/create` does (docs/conversations.md, "Servers that ask the user")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CallToolResult,
    ErrorData,
    InputRequest,
    InputRequiredResult,
    InputResponse,
    InputResponses,
)

INTERNAL_ERROR = -32603
Ask = Callable[[str, InputRequest], Awaitable[InputResponse | ErrorData]]
Again = Callable[
    [InputResponses | None, str | None], Awaitable[CallToolResult | InputRequiredResult]
]
MAX_ROUNDS = 10
"""Rounds of `input_required` answered before the server is said to keep asking (the SDK's
own default, and the other SDKs')."""
STATE_ONLY_WAIT_S = (0.05, 0.25)
"""A round that carries only `requestState` (the server is still working) is sent again after
a pause that doubles from the first value up to the second."""


async def call_tool(
    session: ClientSession, tool: str, arguments: dict[str, Any] | None
) -> CallToolResult:
    """The tool's final result. When the server answers `input_required`, each embedded request
    goes through the session's own callbacks (the elicitation one answers from the trial's
    script) and the call is sent again with the answers and the server's `requestState`, until
    a result comes. A handshake session never gets such an answer, so this is its plain call.

    Raises:
        MCPError: the server refused the call, a scripted answer could not be sent, or the
            server kept asking past MAX_ROUNDS rounds.
    """

    async def again(
        responses: InputResponses | None, state: str | None
    ) -> CallToolResult | InputRequiredResult:
        return await session.call_tool(
            tool,
            arguments,
            input_responses=responses,
            request_state=state,
            allow_input_required=True,
        )

    async def ask(key: str, request: InputRequest) -> InputResponse | ErrorData:
        meta = request.params.meta if request.params else None
        context = ClientRequestContext(session=session, request_id=key, meta=meta)
        return await session.dispatch_input_request(context, request)

    first = await again(None, None)
    if not isinstance(first, InputRequiredResult):
        return first
    return await _rounds(first, ask, again)


async def _rounds(
    current: CallToolResult | InputRequiredResult, ask: Ask, again: Again
) -> CallToolResult:
    """Answer the server's requests and send the call again until a result comes. The farm
    drives the loop itself, through the SDK's public session calls only (the SDK's own driver
    lives in a private module): the requests of one round are answered one at a time, in the
    server's order, so a scripted user's answers are given in the same order on every run."""
    wait = STATE_ONLY_WAIT_S[0]
    for _round in range(MAX_ROUNDS):
        if not isinstance(current, InputRequiredResult):
            return current
        responses: InputResponses | None = None
        if current.input_requests:
            wait = STATE_ONLY_WAIT_S[0]
            responses = {}
            for key, request in current.input_requests.items():
                answer = await ask(key, request)
                if isinstance(answer, ErrorData):
                    raise MCPError.from_error_data(answer)
                responses[key] = answer
        else:
            await anyio.sleep(wait)
            wait = min(wait * 2, STATE_ONLY_WAIT_S[1])
        current = await again(responses, current.request_state)
    if not isinstance(current, InputRequiredResult):
        return current
    # The server's fault, reported the way a refused call is.
    raise MCPError(
        code=INTERNAL_ERROR,
        message=f"the server still asked for input after {MAX_ROUNDS} rounds",
    )
