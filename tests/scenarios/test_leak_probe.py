"""The leak probe decides only from a state it establishes: a server that already holds the
seed when the probe starts (left by an earlier run, past a reset it claims) is not passed."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import Settings
from mcp_farm.workers.mcp.pool import REPO_ROOT
from mcp_farm.workers.node.runtime import Runtime
from tests.scenarios.leaks import leak_problem

pytestmark = pytest.mark.integration

# A server whose memos outlive its process (a file), so `reset: session` is a false claim;
# adding a memo it holds already changes nothing, as with many real stores.
FILE_MEMO = """\
import json, os, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from mcp_farm.scenarios.servers._sdk import MCPServer

store = Path(os.environ["MEMO_FILE"])
server = MCPServer("filememo")

def memos():
    return json.loads(store.read_text()) if store.exists() else []

@server.tool()
def add_memo(text: str) -> str:
    \"\"\"Keep a memo (once).\"\"\"
    kept = memos()
    if text not in kept:
        store.write_text(json.dumps([*kept, text]))
    return "kept"

@server.tool()
def list_notes() -> str:
    \"\"\"The memos kept.\"\"\"
    return "\\n".join(memos()) or "no memos yet"

server.run("stdio")
"""

SUITE = """\
suite: leaky
servers:
  - name: filememo
    command: ["{{python}}", {server!r}]
    env: {{MEMO_FILE: {store!r}}}
    reset: session
scenarios:
  - id: leaky.milk
    version: 1
    tier: simple
    prompt: What memos do I have?
    servers: [filememo]
    setup:
      - tool: add_memo
        arguments: {{text: buy milk}}
    expect:
      - tool: list_notes
        example: {{}}
    final_answer: milk
    example_answer: You have one memo, buy milk.
"""


def test_a_server_that_keeps_the_seed_from_an_earlier_run_is_not_passed(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    server = tmp_path / "filememo.py"
    server.write_text(FILE_MEMO.format(root=str(REPO_ROOT)), encoding="utf-8")
    suite = tmp_path / "leaky.yaml"
    store = tmp_path / "memos.json"
    suite.write_text(SUITE.format(server=str(server), store=str(store)), encoding="utf-8")
    scenario = load_suite(str(suite)).scenarios[0]
    runtime, settings = warm
    (tmp_path / "first").mkdir()
    (tmp_path / "again").mkdir()
    first = leak_problem(str(suite), scenario, runtime, settings, tmp_path / "first")
    assert first is not None and "a trial after a seeded one got a different answer" in first
    # The next run starts where the last left off: the seed is already there.
    again = leak_problem(str(suite), scenario, runtime, settings, tmp_path / "again")
    assert again is not None and "the probe cannot decide" in again, again
