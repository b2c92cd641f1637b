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
    Distractor,
    answer,
    distractors,
)


class DistractorServer(MCPServer):
    """Lists the catalogue's distractors with their own schemas, and answers their calls."""

    def __init__(self, tools: tuple[Distractor, ...]) -> None:
        super().__init__("distractors", instructions="Tools of other teams' systems.")
        self.by_name = {t.name: t for t in tools}

    async def list_tools(self) -> list[MCPTool]:
        return [
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
            for t in self.by_name.values()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult:
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
