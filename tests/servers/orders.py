"""Test-only MCP server in two versions, for replay: version 2 renames a field of `get_order`
(`total` → `amount`) and makes `cancel_order` fail."""

from __future__ import annotations

import argparse
import json

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    serve,
)


def build(args: argparse.Namespace) -> MCPServer:
    server = MCPServer("orders")
    v2 = args.version == 2

    @server.tool()
    def get_order(order_id: str) -> str:
        """An order's total and status, as JSON."""
        order = {"order_id": order_id, "status": "open"}
        order["amount" if v2 else "total"] = 120
        return json.dumps(order)

    @server.tool()
    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        if v2:
            raise ToolError("cancelling needs a reason now")
        return f"order {order_id} cancelled"

    return server


if __name__ == "__main__":
    serve(build, add_args=lambda p: p.add_argument("--version", type=int, default=1))
