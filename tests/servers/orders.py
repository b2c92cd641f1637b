"""Test-only MCP server in versions, for replay: version 2 renames a field of `get_order`
(`total` → `amount`) and makes `cancel_order` fail. Options change one thing each: the end of a
long `log` past the 4,000 characters a model is shown (`--tail`), a field of the structured
content only (`--note`), a timestamp and a random id in every answer (`--stamp`), a tool's
description (`--describe`), and one more tool (`--refunds`)."""

from __future__ import annotations

import argparse
import json
import uuid
from datetime import UTC, datetime

from mcp.types import CallToolResult, TextContent

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    serve,
)

LOG_CHARS = 5000
"""Characters of `log` before its tail: past any result_chars the suites use."""


def _order(args: argparse.Namespace, order_id: str) -> tuple[dict[str, object], dict[str, object]]:
    """The order as the text says it, and as the structured content says it."""
    order: dict[str, object] = {"order_id": order_id, "status": "open"}
    order["amount" if args.version == 2 else "total"] = 120
    if args.tail:
        order["log"] = "." * LOG_CHARS + args.tail
    if args.stamp:
        order["checked_at"] = datetime.now(UTC).isoformat()
        order["request"] = f"req-{uuid.uuid4().hex[:8]}"
    structured = dict(order) | ({"note": args.note} if args.note else {})
    return order, structured


def build(args: argparse.Namespace) -> MCPServer:
    server = MCPServer("orders")
    v2 = args.version == 2

    @server.tool()
    def get_order(order_id: str) -> CallToolResult:
        """An order's total and status, as JSON."""
        order, structured = _order(args, order_id)
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(order))],
            structured_content=structured,
        )

    def cancel_order(order_id: str) -> str:
        if v2:
            raise ToolError("cancelling needs a reason now")
        return f"order {order_id} cancelled"

    server.tool(description=args.describe or "Cancel an order.")(cancel_order)

    if args.refunds:

        @server.tool()
        def refund_order(order_id: str) -> str:
            """Refund an order."""
            return f"order {order_id} refunded"

    return server


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", type=int, default=1)
    parser.add_argument("--tail", default="")
    parser.add_argument("--note", default="")
    parser.add_argument("--stamp", action="store_true")
    parser.add_argument("--describe", default="")
    parser.add_argument("--refunds", action="store_true")


if __name__ == "__main__":
    serve(build, add_args=_args)
