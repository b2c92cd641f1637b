"""Two attached servers that list the same tool name: refused when the names would shadow
each other, fine when the prompt config shows tools prefixed by their server."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcp_farm.scenarios import (
    load_prompt,
    load_suite,
)
from mcp_farm.schema import (
    Settings,
    TrialResult,
)
from mcp_farm.workers.trial import execute_trial
from tests.helpers import trial

pytestmark = pytest.mark.integration
MEMO_SERVER = Path(__file__).resolve().parents[2] / "servers" / "memo.py"


def _run(
    tmp_path: Path, settings: Settings, naming: str | None, call: str, config: str = "native"
) -> TrialResult:
    # The notes fixture server and the memo test server both list `list_notes`.
    path = tmp_path / "clash.yaml"
    path.write_text(f"""
suite: clash
servers:
  - name: memo
    command: ["{{python}}", "{MEMO_SERVER}"]
scenarios:
  - id: clash.list
    version: 1
    tier: simple
    prompt: What notes do I have?
    servers: [notes, memo]
    open_tools: true
""")
    prompt = load_prompt(config)
    if naming is not None:
        prompt = prompt.model_copy(update={"tool_naming": naming})
    scenario = load_suite(str(path)).scenarios[0]
    script = [{"call": {"name": call, "arguments": {}}}, {"answer": "done"}]
    return anyio.run(
        execute_trial, trial(scenario, script, suite=str(path), prompt=prompt), settings
    )


def test_two_servers_listing_one_tool_name_make_an_infra_error_that_names_both(
    tmp_path: Path, settings: Settings
) -> None:
    result = _run(tmp_path, settings, "plain", "list_notes")
    assert result.outcome == "infra_error"
    assert "servers 'notes' and 'memo' both list a tool named 'list_notes'" in result.detail
    assert "tool_naming: server_prefixed" in result.detail
    assert result.turns == 0  # the model never saw a tool list missing one of them


def test_prefixed_tool_names_keep_both_clashing_tools_reachable(
    tmp_path: Path, settings: Settings
) -> None:
    result = _run(tmp_path, settings, "server_prefixed", "memo__list_notes")
    assert result.outcome == "pass", result.detail
    assert [(c.server, c.tool, c.ok) for c in result.tool_calls] == [("memo", "list_notes", True)]
    assert result.tool_calls[0].result_text == "no memos yet"


def test_the_shipped_native_prefixed_config_loads_and_reaches_both_clashing_tools(
    tmp_path: Path, settings: Settings
) -> None:
    # The config the clash error names: native mode, tools shown as server__tool.
    config = load_prompt("native-prefixed")
    assert (config.id, config.mode, config.tool_naming) == (
        "native-prefixed",
        "native",
        "server_prefixed",
    )
    result = _run(tmp_path, settings, None, "notes__list_notes", config="native-prefixed")
    assert result.outcome == "pass", result.detail
    assert [(c.server, c.tool, c.ok) for c in result.tool_calls] == [("notes", "list_notes", True)]
