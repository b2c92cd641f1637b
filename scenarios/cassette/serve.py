"""Serve a cassette as an MCP server: the recorded tools, the recorded answers to recorded calls,
and a tool error marked `not recorded` for any other call, or, recording new episodes, the live
server's answer to it, added to the cassette.

    python -m mcp_farm.scenarios.cassette.serve CASSETTE [--transport http --port 8765]
        [--ignore RULES] [--live-url URL | --live COMMAND...]

A server definition with `replay: CASSETTE` starts this (scenarios/cassette/launch.py). Calls
are matched by tool and the canonical JSON of their arguments; within one MCP session the n-th
call of a key gets the key's n-th recorded answer (the last one once they run out). An answer
recorded after the server asked the user is given after the same requests, sent to the client,
got the same replies (`followed`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.types import (
    CallToolResult,
    ContentBlock,
    ElicitResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)
from pydantic import TypeAdapter, ValidationError

from mcp_farm.scenarios.cassette.live import LiveLaunch, LiveLink, LiveUnavailable
from mcp_farm.scenarios.cassette.tape import (
    MISS_META,
    MISS_PREFIX,
    Cassette,
    ElicitExchange,
    Exchange,
    RecordedTool,
    add_to_cassette,
    answers_by_key,
    load_cassette,
    masked,
    match_key,
    recorded_answer,
    recorded_tool,
)
from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    serve,
)
from mcp_farm.schema import IgnoreRules, SpecError, canonical_json, with_lines

SESSION_HEADER = "mcp-session-id"
"""The header naming a session over streamable HTTP; stdio has one session, the process."""

SHOWN_ARGUMENTS = 300
"""Characters of an unrecorded call's arguments quoted in its error."""

_BLOCK: TypeAdapter[Any] = TypeAdapter(ContentBlock)


def _checked(cassette: Cassette, source: str) -> None:
    """SpecError naming the field of a content block MCP would not accept."""
    for i, exchange in enumerate(cassette.calls):
        for j, answer in enumerate(exchange.answers):
            for k, block in enumerate(answer.content):
                try:
                    _BLOCK.validate_python(block)
                except ValidationError as exc:
                    where = f"calls[{i}].answers[{j}].content[{k}]"
                    problem = exc.errors()[0]["msg"]
                    raise with_lines([SpecError(source, where, problem)])[0] from None


@dataclass(frozen=True)
class Served:
    """One recorded answer as the server gives it."""

    result: CallToolResult
    switch: int | None
    """The tool list it switches the session to; None: the list stays."""
    asks: list[ElicitExchange]
    """The requests the server sent the user before it, and the replies it got."""


def _results(cassette: Cassette, source: str, rules: IgnoreRules) -> dict[str, list[Served]]:
    """Each recorded call's answers as the server gives them, by the key calls are matched by."""
    _checked(cassette, source)
    return {
        key: [
            Served(
                CallToolResult(
                    content=[_BLOCK.validate_python(b) for b in answer.content],
                    structured_content=answer.structured_content,
                    is_error=answer.is_error,
                ),
                answer.switch(),
                answer.asks(),
            )
            for answer in answers
        ]
        for key, answers in answers_by_key(cassette, rules).items()
    }


Ask = Callable[[ElicitExchange], Awaitable[ElicitResult]]
"""Sends one recorded request to the client and returns the user's reply."""

_DONE = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}


async def followed(answers: list[Served], first: int, ask: Ask) -> Served | str:
    """The answer to give, asking the user as the recording did: the `first` answer when it
    asked nothing; else its requests, one at a time, each reply narrowing the answers to those
    recorded after the same requests and replies (the first such in the file's order once its
    requests are all made). A reply no recording got: why, in words."""
    leading = answers[first]
    if not leading.asks:
        return leading
    paths = [leading, *(a for i, a in enumerate(answers) if i != first and a.asks)]
    step = 0
    while True:
        request = paths[0].asks[step]
        reply = await ask(request)
        asked = [a for a in paths if len(a.asks) > step and a.asks[step].same_request(request)]
        paths = [a for a in asked if a.asks[step].same_reply(reply.action, reply.content)]
        if not paths:
            return _difference(request, reply, [a.asks[step] for a in asked])
        step += 1
        done = next((a for a in paths if len(a.asks) == step), None)
        if done is not None:
            return done


def _difference(
    request: ElicitExchange, reply: ElicitResult, recorded: list[ElicitExchange]
) -> str:
    """How the user's reply differs from every recorded one, in words."""
    actions = list(dict.fromkeys(e.action for e in recorded))
    message = request.message
    if len(message) > SHOWN_ARGUMENTS:
        message = message[:SHOWN_ARGUMENTS] + "…"
    asked = f"the server asked {message!r}"
    if reply.action not in actions:
        return f"{asked}, and the user {_DONE[reply.action]} where the cassette recorded " + (
            " or ".join(actions)
        )
    shown = [canonical_json(e.content) for e in recorded if e.action == reply.action]
    return (
        f"{asked}, and the user {_DONE[reply.action]} with {canonical_json(reply.content)} "
        f"where the cassette recorded {' or '.join(shown)}"
    )


def _tool(t: RecordedTool) -> Tool:
    return Tool(
        name=t.name,
        description=t.description or None,
        input_schema=t.input_schema,
        output_schema=t.output_schema,
        annotations=t.annotations,  # a mapping: Tool validates it
    )


class CassetteServer(MCPServer):
    """An MCP server that lists a cassette's tools and answers from its recorded calls; with
    a live server (`live`), it records new episodes: what the cassette does not hold is asked
    of the live server, served, and added to the cassette file."""

    def __init__(
        self,
        cassette: Cassette,
        source: str,
        rules: IgnoreRules | None = None,
        live: LiveLaunch | None = None,
    ) -> None:
        super().__init__(
            cassette.server,
            instructions=cassette.instructions or None,
            lifespan=self._live_link if live is not None else None,
        )
        self.cassette, self.source, self.launch = cassette, source, live
        self.link: LiveLink | None = None
        self.live_keys: set[str] = set()
        """Calls this process sent to the live server: they go there every time after."""
        self.tools = [_tool(t) for t in cassette.tools]
        self.lists = [[_tool(t) for t in listed.tools] for listed in cassette.tool_lists]
        """The other lists the server announced (`tool_lists`): list k+1 of an event."""
        self.offered: dict[str, int] = {}
        """Per MCP session, the list it is offered, where an answer changed it (0: `tools`)."""
        self.rules = rules or IgnoreRules()
        """What the server definition says to ignore in a call's arguments when matching."""
        self.answers = _results(cassette, source, self.rules)
        self.served: dict[str, Counter[str]] = {}
        """Per MCP session, how often each recorded call was answered."""

    @asynccontextmanager
    async def _live_link(self, _server: Any) -> AsyncIterator[dict[str, Any]]:
        """For the server's run: a link to the live server, opened at its first use."""
        assert self.launch is not None
        async with anyio.create_task_group() as tg:
            self.link = LiveLink(tg, self.launch)
            try:
                yield {}
            finally:
                self.link.closed.set()

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        # The SDK's handler has no session to hand to `list_tools`; the list is per session.
        headers = Context(request_context=ctx, mcp_server=self).headers or {}
        offered = self.offered.get(headers.get(SESSION_HEADER, ""), 0)
        if offered:
            return ListToolsResult(tools=self.lists[offered - 1])
        return ListToolsResult(tools=await self.list_tools())

    async def list_tools(self) -> list[Tool]:
        if not self.tools and self.link is not None:  # a cassette begun by this recording
            try:
                listed = await self.link.tools()
            except LiveUnavailable:
                return []  # the first call says why
            begun = self.cassette.model_copy(update={"tools": [recorded_tool(t) for t in listed]})
            await anyio.to_thread.run_sync(add_to_cassette, Path(self.source), begun, self.rules)
            self.cassette, self.tools = begun, listed
        return self.tools

    async def _recorded_live(
        self, name: str, arguments: dict[str, Any], key: str
    ) -> CallToolResult:
        """The live server's answer to a call, added to the cassette file."""
        assert self.link is not None
        started = time.perf_counter()
        try:
            result = await self.link.call(name, arguments)
        except LiveUnavailable as exc:
            return _miss(name, arguments, f" Recording new episodes failed: {exc}")
        answer = recorded_answer(result, time.perf_counter() - started)
        exchange = Exchange(tool=name, arguments=masked(arguments), answers=[answer])
        new = self.cassette.model_copy(update={"calls": [exchange]})
        await anyio.to_thread.run_sync(add_to_cassette, Path(self.source), new, self.rules)
        self.live_keys.add(key)
        return result

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        key = match_key(name, arguments, self.rules)
        answers = self.answers.get(key)
        if self.link is not None and (answers is None or key in self.live_keys):
            return await self._recorded_live(name, arguments, key)
        if answers is None:
            return _miss(name, arguments)
        headers = context.headers if context is not None else None
        session = (headers or {}).get(SESSION_HEADER, "")
        count = self.served.setdefault(session, Counter())
        first = min(count[key], len(answers) - 1)
        count[key] += 1
        picked = await followed(answers, first, _asking(context))
        if isinstance(picked, str):
            return _miss(name, arguments, instead=f"during the call {picked}")
        if picked.switch is not None and context is not None:
            # As the recorded server did: the new list from now on, and the notice of it.
            self.offered[session] = picked.switch
            await context.session.send_tool_list_changed()
        return picked.result


def _asking(context: Context[Any, Any] | None) -> Ask:
    """How a call asks the user: an elicitation request on its own session, related to the
    call (over streamable HTTP it travels on the call's stream)."""

    async def ask(request: ElicitExchange) -> ElicitResult:
        if context is None:  # called outside a session: no user to ask
            return ElicitResult(action="cancel")
        reply: ElicitResult = await context.session.elicit_form(
            request.message, request.requested_schema, related_request_id=context.request_id
        )
        return reply

    return ask


def _miss(name: str, arguments: dict[str, Any], why: str = "", instead: str = "") -> CallToolResult:
    # Returned, not raised as a ToolError: the `_meta` marker must travel with the error so
    # the farm can mark the trial, whatever the error's text says.
    shown = canonical_json(arguments)
    if len(shown) > SHOWN_ARGUMENTS:
        shown = shown[:SHOWN_ARGUMENTS] + "…"
    # `instead`: the call was recorded, but not after what the user answered during it.
    what = instead or f"no call of {name} with these arguments was recorded"
    text = f"{MISS_PREFIX} {name} {shown}. This server replays recorded answers, and {what}.{why}"
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        is_error=True,
        meta={MISS_META: "not recorded"},
    )


def build(
    path: Path, rules: IgnoreRules | None = None, live: LiveLaunch | None = None
) -> CassetteServer:
    """The server for the cassette at `path`; SpecError naming the file when it is unusable.
    Recording new episodes (`live`), a missing file is a cassette begun empty."""
    if live is not None and not path.exists():
        return CassetteServer(Cassette(server=path.stem, tools=[]), str(path), rules, live)
    return CassetteServer(load_cassette(path), str(path), rules, live)


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cassette", type=Path, help="the cassette file (YAML) to serve")
    parser.add_argument(
        "--ignore",
        default="{}",
        help='the server definition\'s ignore rules, as JSON (`{"paths": [...], '
        '"patterns": [...]}`): values of a call\'s arguments left out when matching',
    )
    parser.add_argument(
        "--live-url", default=None, help="record new episodes from the live server at this URL"
    )
    parser.add_argument(
        "--live",
        nargs=argparse.REMAINDER,
        default=None,
        help="record new episodes from the live server this command starts (the rest of the "
        "command line)",
    )


def _build_or_exit(args: argparse.Namespace) -> CassetteServer:
    try:
        rules = IgnoreRules.model_validate_json(args.ignore)
    except ValidationError as exc:
        print(f"cannot serve the cassette: --ignore: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    live = None
    if args.live_url or args.live:
        live = LiveLaunch(command=list(args.live or []), url=args.live_url)
    try:
        return build(args.cassette, rules, live)
    except SpecError as exc:
        # stderr: on stdio, stdout is the protocol stream. The farm shows the server's stderr
        # log when a server fails to start.
        print(f"cannot serve the cassette: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    serve(_build_or_exit, add_args=_args)
