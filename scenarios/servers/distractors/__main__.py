"""The distractor server: every tool of the catalogue listed, callable and answering plausibly
(docs/robustness.md). Run as `python -m mcp_farm.scenarios.servers.distractors`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mcp.types import CallToolResult, TextContent
from mcp.types import Tool as MCPTool

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    serve,
)
from mcp_farm.scenarios.servers.distractors._catalog import (
    CATALOG,
    answer,
    distractors,
)
from mcp_farm.scenarios.servers.distractors._made import ADD_TOOL, Distractor
from mcp_farm.schema.vocab import CONTROL_META

ADD_SCHEMA = {
    "type": "object",
    "properties": {"tools": {"type": "array", "items": {"type": "object"}}},
    "required": ["tools"],
}


class DistractorServer(MCPServer):
    """Lists the catalogue's distractors with their own schemas, and answers their calls and
    those of the distractors a trial made of its own servers' tools (ADD_TOOL).

    No instructions: what the model reads of servers must not tell it which tools are here."""

    def __init__(self, tools: tuple[Distractor, ...]) -> None:
        super().__init__("distractors")
        self.listed = tuple(t.name for t in tools)
        self.by_name = {t.name: t for t in tools}

    async def list_tools(self) -> list[MCPTool]:
        control = MCPTool(
            name=ADD_TOOL,
            description="Serve these distractors too (for the farm, never a model).",
            input_schema=ADD_SCHEMA,
            _meta={CONTROL_META: True},
        )
        return [control] + [
            MCPTool(
                name=t.name,
                description=t.description,
                input_schema=t.input_schema,
                _meta={
                    "farm/shown": t.shown,
                    "farm/origin": t.origin,
                    "farm/family": t.family,
                    "farm/of": t.of,
                },
            )
            for t in (self.by_name[name] for name in self.listed)
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult:
        if name == ADD_TOOL:
            try:
                made = [Distractor(**fields) for fields in arguments.get("tools") or []]
            except TypeError as exc:
                raise ToolError(f"not a distractor: {exc}") from None
            self.by_name.update({d.name: d for d in made})
            return CallToolResult(content=[TextContent(type="text", text="ok")])
        tool = self.by_name.get(name)
        if tool is None:
            raise ToolError(f"unknown tool: {name}")
        return CallToolResult(content=[TextContent(type="text", text=answer(tool, arguments))])


def build(args: argparse.Namespace) -> MCPServer:
    return DistractorServer(distractors(args.catalog))


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--catalog", type=Path, default=CATALOG)


if __name__ == "__main__":
    serve(build, add_args=_args)
