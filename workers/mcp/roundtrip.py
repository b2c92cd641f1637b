"""Calling a tool on any session the pool opens, following the `input_required` round trip a
2026-07-28 server may answer with, so its questions reach the same scripted user as an
`elicitation/create` does (docs/conversations.md, "Servers that ask the user")."""

from __future__ import annotations

from typing import Any

from mcp import ClientSession
from mcp.client._input_required import (
    InputRequiredRoundsExceededError,
    run_input_required_driver,
)
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


async def call_tool(
    session: ClientSession, tool: str, arguments: dict[str, Any] | None
) -> CallToolResult:
    """The tool's final result. When the server answers `input_required`, each embedded request
    goes through the session's own callbacks (the elicitation one answers from the trial's
    script) and the call is sent again with the answers and the server's `requestState`, until
    a result comes. A handshake session never gets such an answer, so this is its plain call.

    Raises:
        MCPError: the server refused the call, a scripted answer could not be sent, or the
            server kept asking past the SDK's round limit.
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
    try:
        return await run_input_required_driver(first, dispatch=ask, retry=again)
    except InputRequiredRoundsExceededError as exc:
        # The server's fault, reported the way a refused call is.
        raise MCPError(code=INTERNAL_ERROR, message=str(exc)) from None
