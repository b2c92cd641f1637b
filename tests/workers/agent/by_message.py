"""The scripted agent process for a sweep of several scenarios: it picks its script by the first
user message of the trial, and can hold still after its first call until it is killed.

FARM_AGENT_SCRIPTS names a JSON file mapping each scenario's first user message to its script;
the first process of a trial keeps its choice in the trial's folder (its working folder), so a
conversation's later turns, one process each (`oneshot`), take the same script. With
FARM_AGENT_HOLD set to a path, the first agent process of the whole sweep to make a call writes
`PGID PORT` (its process group, the recording proxy's port) there once the call is answered,
then waits to be killed; every other process runs straight through.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp import ClientSession

from mcp_farm.scenarios.agents import scripted

CHOSEN = Path(".by-message-script.json")


def _choose(message: str) -> None:
    """This trial's script, chosen by its first message and kept in the working folder."""
    if not CHOSEN.exists():
        scripts: dict[str, Any] = json.loads(Path(os.environ["FARM_AGENT_SCRIPTS"]).read_text())
        if message not in scripts:
            raise SystemExit(f"no script for the message {message!r}")
        CHOSEN.write_text(json.dumps(scripts[message]), encoding="utf-8")
    os.environ["FARM_AGENT_SCRIPT"] = str(CHOSEN.resolve())


def _claim(hold: Path) -> bool:
    """Whether this process is the sweep's first to call a tool (it holds then)."""
    try:
        os.close(os.open(f"{hold}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _hold_after_first_call(hold: Path) -> None:
    """Make the sweep's first call, tell the test where the agent and its proxy are, wait."""
    call_tool = ClientSession.call_tool

    async def call_then_hold(self: ClientSession, *args: Any, **kwargs: Any) -> Any:
        result = await call_tool(self, *args, **kwargs)
        if _claim(hold):
            config = json.loads(Path(os.environ["FARM_MCP_CONFIG"]).read_text())
            url = next(iter(config["mcpServers"].values()))["url"]
            staged = hold.with_suffix(".staged")
            staged.write_text(f"{os.getpgid(0)} {urlsplit(url).port}")
            staged.rename(hold)  # whole or absent: the test reads it once it exists
            await anyio.sleep_forever()
        return result

    ClientSession.call_tool = call_then_hold  # type: ignore[method-assign]


def main() -> None:
    message = sys.stdin.read()
    _choose(message)
    if hold := os.environ.get("FARM_AGENT_HOLD"):
        _hold_after_first_call(Path(hold))
    scripted.main([*sys.argv[1:], message])


if __name__ == "__main__":
    main()
