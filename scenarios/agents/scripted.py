"""A scripted agent process, for tests: it makes the calls a script gives, through the trial's
config file, and answers as the script says.

The script (a JSON file named by FARM_AGENT_SCRIPT) is the farm's scripted-model form: a list
of `{"call": {"name", "arguments"}}` and `{"answer": …}` items; each user message takes the
items up to and including the next answer. `--convention oneshot` (the default) reads one
message on stdin (or as the last argument) and prints the answer, one process per message (it
notes how many answers it gave in its working folder, the trial's own, so the next process
takes the next turn's items); `--convention jsonl` reads `{"user": …}` lines and writes
`{"assistant": …}` lines.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from mcp_farm.scenarios.agents._client import config_path, sessions, tool_owners

DONE = Path(".scripted-agent-answers")
"""In the working folder: how many answers the oneshot processes before this one gave."""


def _script() -> list[dict[str, Any]]:
    path = os.environ.get("FARM_AGENT_SCRIPT")
    if not path:
        raise SystemExit("FARM_AGENT_SCRIPT names no script")
    items: list[dict[str, Any]] = json.loads(Path(path).read_text(encoding="utf-8"))
    return items


def _after_answers(items: list[dict[str, Any]], answers: int) -> list[dict[str, Any]]:
    """The items left once `answers` answers were given."""
    while answers and items:
        if "answer" in items.pop(0):
            answers -= 1
    return items


async def _turn(opened: dict[str, Any], items: list[dict[str, Any]]) -> str:
    """Make the script's calls up to its next answer; the answer."""
    while items:
        item = items.pop(0)
        if "answer" in item:
            return str(item["answer"])
        call = item["call"]
        owners = await tool_owners(opened)  # listed again: a list may change mid-session
        server = owners[call["name"]][0] if call["name"] in owners else next(iter(opened))
        await opened[server].call_tool(call["name"], call.get("arguments") or {})
    return "done"


async def _main(args: argparse.Namespace) -> None:
    items = _script()
    async with sessions(config_path(args.config)) as opened:
        if args.convention == "oneshot":
            if args.prompt is None:
                sys.stdin.read()  # the script, not the message, decides what is done
            given = int(DONE.read_text()) if DONE.exists() else 0
            answer = await _turn(opened, _after_answers(items, given))
            DONE.write_text(str(given + 1))
            print(answer)
            return
        for line in sys.stdin:
            if not line.strip():
                continue
            json.loads(line)["user"]
            answer = await _turn(opened, items)
            sys.stdout.write(json.dumps({"assistant": answer}) + "\n")
            sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", help="the mcpServers file (default: FARM_MCP_CONFIG)")
    parser.add_argument("--convention", choices=["oneshot", "jsonl"], default="oneshot")
    parser.add_argument("prompt", nargs="?", help="the user's message (oneshot; else stdin)")
    anyio.run(_main, parser.parse_args(argv))


if __name__ == "__main__":
    main()
