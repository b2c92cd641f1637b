"""A stdio↔HTTP bridge, for agents that start their MCP servers as commands: it serves MCP on its
stdin and stdout and relays every message, both ways, to one streamable-HTTP URL (the farm's
recording proxy). The farm writes it into the config file's `command` entries when the target
says `servers_as: stdio`.

    python -m mcp_farm.scenarios.agents.bridge http://127.0.0.1:41237/notes/mcp
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server


async def _pump(source: Any, sink: Any) -> None:
    """Every message from `source` to `sink`, until `source` ends; a transport's exception
    (a line that is not JSON-RPC) is dropped, as the other side never sent it."""
    async with sink:
        async for message in source:
            if not isinstance(message, Exception):
                await sink.send(message)


async def _bridge(url: str) -> None:
    async with (
        stdio_server() as (from_agent, to_agent),
        streamable_http_client(url) as (from_server, to_server),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(_pump, from_server, to_agent)
        await _pump(from_agent, to_server)  # the agent closed its end: the bridge is done
        tg.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url", help="the streamable-HTTP URL to relay to")
    anyio.run(_bridge, parser.parse_args(argv).url)


if __name__ == "__main__":
    main()
