"""A scripted agent process, for tests: it makes the calls a script gives, through the trial's
config file, and answers as the script says.

The script (a JSON file named by FARM_AGENT_SCRIPT) is the farm's scripted-model form: a list
of `{"call": {"name", "arguments"}}` and `{"answer": …}` items; each user message takes the
items up to and including the next answer. `--convention oneshot` (the default) reads one
message on stdin (or as the last argument) and prints the answer, one process per message (it
notes how many answers it gave in its working folder, the trial's own, so the next process
takes the next turn's items); `--convention jsonl` reads `{"user": …}` lines and writes
`{"assistant": …}` lines.

It lists the tools once and again only after a server says its list changed
(`notifications/tools/list_changed`), noting each such notice in `.scripted-agent-heard` in its
working folder; a call of a tool it was not shown waits (bounded) for that notice first. An item
`{"elicit": [entries]}` answers the servers' elicitation requests for the rest of its turn with
the scenario's `elicit` form (`message` pattern, `field`, `action`, `content`): the first entry
that matches answers, and a request none matches is declined, as the farm's scripted user does.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.types import ElicitRequestFormParams, ElicitResult, ToolListChangedNotification

from mcp_farm.scenarios.agents._client import config_path, sessions, tool_owners

DONE = Path(".scripted-agent-answers")
"""In the working folder: how many answers the oneshot processes before this one gave."""
HEARD = Path(".scripted-agent-heard")
"""In the working folder: a line per tool-list change a server announced to this agent."""
NOTICE_WAIT_S = 10.0
"""How long a call of a tool not yet shown waits for a list-change notice."""


@dataclass
class Known:
    """What the agent knows of the servers: their tools as last listed, whether a change was
    announced since, and the elicitation entries of the current turn."""

    owners: dict[str, tuple[str, Any]] | None = None
    changed: anyio.Event = field(default_factory=anyio.Event)
    elicit: list[dict[str, Any]] = field(default_factory=list)

    async def heard(self, message: object) -> None:
        if isinstance(message, ToolListChangedNotification):
            with HEARD.open("a", encoding="utf-8") as out:
                out.write("notifications/tools/list_changed\n")
            self.owners = None
            self.changed.set()

    async def answer(self, _context: Any, params: Any) -> ElicitResult:
        """The first `elicit` entry that matches the request, else a decline."""
        schema = params.requested_schema if isinstance(params, ElicitRequestFormParams) else {}
        for entry in self.elicit if isinstance(params, ElicitRequestFormParams) else []:
            if entry.get("field") and entry["field"] not in (schema.get("properties") or {}):
                continue
            if entry.get("message") and not re.search(entry["message"], params.message, re.I):
                continue
            return ElicitResult(action=entry["action"], content=entry.get("content"))
        return ElicitResult(action="decline")

    async def owner(self, opened: dict[str, Any], tool: str) -> str:
        """The server that lists `tool`: listed again after a change was announced, and
        waited for (bounded) when it was not shown yet."""
        if self.owners is None:
            self.changed = anyio.Event()
            self.owners = await tool_owners(opened)
        if tool not in self.owners:
            with anyio.move_on_after(NOTICE_WAIT_S):
                await self.changed.wait()
            self.changed = anyio.Event()
            self.owners = await tool_owners(opened)
        return self.owners[tool][0] if tool in self.owners else next(iter(opened))


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


async def _turn(opened: dict[str, Any], items: list[dict[str, Any]], known: Known) -> str:
    """Make the script's calls up to its next answer; the answer."""
    known.elicit = []
    while items:
        item = items.pop(0)
        if "answer" in item:
            return str(item["answer"])
        if "elicit" in item:
            known.elicit = list(item["elicit"])
            continue
        call = item["call"]
        server = await known.owner(opened, call["name"])
        await opened[server].call_tool(call["name"], call.get("arguments") or {})
    return "done"


async def _main(args: argparse.Namespace) -> None:
    items = _script()
    known = Known()
    hooks = {"message_handler": known.heard, "elicitation_callback": known.answer}
    async with sessions(config_path(args.config), **hooks) as opened:
        if args.convention == "oneshot":
            if args.prompt is None:
                sys.stdin.read()  # the script, not the message, decides what is done
            given = int(DONE.read_text()) if DONE.exists() else 0
            answer = await _turn(opened, _after_answers(items, given), known)
            DONE.write_text(str(given + 1))
            print(answer)
            return
        for line in sys.stdin:
            if not line.strip():
                continue
            json.loads(line)["user"]
            answer = await _turn(opened, items, known)
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
