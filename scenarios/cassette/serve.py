"""Serve a cassette as an MCP server: the recorded tools, the recorded answers to recorded calls,
and a tool error marked `not recorded` for any other call.

    python -m mcp_farm.scenarios.cassette.serve CASSETTE [--transport http --port 8765]

A server definition with `replay: CASSETTE` starts this (scenarios/cassette/launch.py). Calls
are matched by tool and the canonical JSON of their arguments; within one MCP session the n-th
call of a key gets the key's n-th recorded answer (the last one once they run out).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ContentBlock, InputRequiredResult, TextContent, Tool
from pydantic import TypeAdapter, ValidationError

from mcp_farm.scenarios.cassette.tape import (
    MISS_META,
    MISS_PREFIX,
    Cassette,
    answers_by_key,
    load_cassette,
    match_key,
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


def _results(
    cassette: Cassette, source: str, rules: IgnoreRules
) -> dict[str, list[CallToolResult]]:
    """Each recorded call's answers as MCP results, by the key calls are matched by."""
    _checked(cassette, source)
    return {
        key: [
            CallToolResult(
                content=[_BLOCK.validate_python(b) for b in answer.content],
                structured_content=answer.structured_content,
                is_error=answer.is_error,
            )
            for answer in answers
        ]
        for key, answers in answers_by_key(cassette, rules).items()
    }


class CassetteServer(MCPServer):
    """An MCP server that lists a cassette's tools and answers from its recorded calls."""

    def __init__(self, cassette: Cassette, source: str, rules: IgnoreRules | None = None) -> None:
        super().__init__(cassette.server, instructions=cassette.instructions or None)
        self.source = source
        self.tools = [
            Tool(
                name=t.name,
                description=t.description or None,
                input_schema=t.input_schema,
                output_schema=t.output_schema,
                annotations=t.annotations,  # a mapping: Tool validates it
            )
            for t in cassette.tools
        ]
        self.rules = rules or IgnoreRules()
        """What the server definition says to ignore in a call's arguments when matching."""
        self.answers = _results(cassette, source, self.rules)
        self.served: dict[str, Counter[str]] = {}
        """Per MCP session, how often each recorded call was answered."""

    async def list_tools(self) -> list[Tool]:
        return self.tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        key = match_key(name, arguments, self.rules)
        answers = self.answers.get(key)
        if answers is None:
            return _miss(name, arguments)
        headers = context.headers if context is not None else None
        session = (headers or {}).get(SESSION_HEADER, "")
        count = self.served.setdefault(session, Counter())
        answer = answers[min(count[key], len(answers) - 1)]
        count[key] += 1
        return answer


def _miss(name: str, arguments: dict[str, Any]) -> CallToolResult:
    # Returned, not raised as a ToolError: the `_meta` marker must travel with the error so
    # the farm can mark the trial, whatever the error's text says.
    shown = canonical_json(arguments)
    if len(shown) > SHOWN_ARGUMENTS:
        shown = shown[:SHOWN_ARGUMENTS] + "…"
    text = (
        f"{MISS_PREFIX} {name} {shown}. This server replays recorded answers, and no call of "
        f"{name} with these arguments was recorded."
    )
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        is_error=True,
        meta={MISS_META: "not recorded"},
    )


def build(path: Path, rules: IgnoreRules | None = None) -> CassetteServer:
    """The server for the cassette at `path`; SpecError naming the file when it is unusable."""
    return CassetteServer(load_cassette(path), str(path), rules)


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cassette", type=Path, help="the cassette file (YAML) to serve")
    parser.add_argument(
        "--ignore",
        default="{}",
        help='the server definition\'s ignore rules, as JSON (`{"paths": [...], '
        '"patterns": [...]}`): values of a call\'s arguments left out when matching',
    )


def _build_or_exit(args: argparse.Namespace) -> CassetteServer:
    try:
        rules = IgnoreRules.model_validate_json(args.ignore)
    except ValidationError as exc:
        print(f"cannot serve the cassette: --ignore: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    try:
        return build(args.cassette, rules)
    except SpecError as exc:
        # stderr: on stdio, stdout is the protocol stream. The farm shows the server's stderr
        # log when a server fails to start.
        print(f"cannot serve the cassette: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    serve(_build_or_exit, add_args=_args)
