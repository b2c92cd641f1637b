"""The third-party suite against the real reference servers installed in .tools/."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import (
    load_suite,
    servers_for,
)
from mcp_farm.scenarios.launchers.git_fixture import build
from mcp_farm.schema import (
    Scenario,
    ServerDef,
    Settings,
)
from mcp_farm.workers.mcp.connections import result_text
from mcp_farm.workers.mcp.pool import (
    REPO_ROOT,
    ServerPool,
)
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import (
    ideal_call_problems,
    ideal_script,
    trial,
)

pytestmark = pytest.mark.integration
SUITE = load_suite("thirdparty")
SCENARIOS = SUITE.scenarios
SERVERS = servers_for("thirdparty")
INSTALLED = [
    ".tools/node/node_modules/.bin/mcp-server-filesystem",
    ".tools/node/node_modules/.bin/mcp-server-memory",
    ".tools/py/bin/mcp-server-time",
    ".tools/py/bin/mcp-server-git",
    ".tools/sqlite/bin/mcp-server-sqlite",
]
HEAD = "1d37012aed7309d70c1b6e7851ca8e507951c0c3"
"""main's head in the git fixture; scenarios name this commit and its parents by hash."""


@pytest.fixture(autouse=True, scope="module")
def _servers_installed() -> None:
    missing = [p for p in INSTALLED if not (REPO_ROOT / p).exists()]
    if not missing:
        return
    message = (
        f"the third-party MCP servers are not installed ({', '.join(missing)} missing): "
        "run `bash scripts/setup.sh --dev`"
    )
    if os.environ.get("CI") == "true":  # CI must run these, never skip them
        pytest.fail(message)
    pytest.skip(message)


def test_the_suite_is_complete_and_self_consistent() -> None:
    assert {s.tier for s in SCENARIOS} == {"simple", "moderate", "complex"}
    assert {name for s in SCENARIOS for name in s.servers} == {
        "ref-filesystem",
        "ref-time",
        "ref-git",
        "ref-memory",
        "ref-sqlite",
    }
    for scenario in SCENARIOS:
        assert "third-party" in scenario.tags, scenario.id
        assert len(scenario.paraphrases) == 2, scenario.id
        assert all(step.example is not None for step in scenario.all_steps), scenario.id
        assert scenario.final_answer and scenario.example_answer, scenario.id
        assert re.search(scenario.final_answer, scenario.example_answer, re.IGNORECASE), scenario.id


def test_the_git_fixture_has_the_same_hashes_on_every_build(tmp_path: Path) -> None:
    heads = []
    for copy in ("a", "b"):
        repo = tmp_path / copy
        repo.mkdir()
        for path in (REPO_ROOT / "scenarios/fixtures/projects/webapp").rglob("*"):
            if path.is_file():
                target = repo / path.relative_to(REPO_ROOT / "scenarios/fixtures/projects/webapp")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(path.read_bytes())
        heads.append(build(repo))
    assert heads == [HEAD, HEAD]


@pytest.mark.parametrize("mode", ["native", "json"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_an_ideal_scripted_agent_passes_through_the_real_servers(
    scenario: Scenario, mode: str, warm: tuple[Runtime, Settings]
) -> None:
    runtime, settings = warm
    spec = trial(scenario, ideal_script(scenario), suite="thirdparty", prompt=mode)
    result = runtime.run(spec, settings)
    assert result.outcome == "pass", (result.detail, [c.error for c in result.tool_calls])
    assert [c.tool for c in result.tool_calls] == scenario.ways()[0][1].expected_tools
    assert ideal_call_problems(scenario, result) == []
    assert all(c.result_text for c in result.tool_calls), result.tool_calls


# Arguments for every tool each server lists, in the order they are called (later calls use
# what earlier ones made). A server version that adds or drops a tool fails the listing check.
PROBES: dict[str, dict[str, dict[str, Any]]] = {
    "ref-filesystem": {
        "list_allowed_directories": {},
        "list_directory": {"path": "webapp"},
        "list_directory_with_sizes": {"path": "webapp", "sortBy": "size"},
        "directory_tree": {"path": "webapp"},
        "search_files": {"path": ".", "pattern": "**/*.js"},
        "get_file_info": {"path": "webapp/package.json"},
        "read_file": {"path": "webapp/README.md"},
        "read_text_file": {"path": "webapp/README.md", "head": 5},
        "read_media_file": {"path": "webapp/package.json"},
        "read_multiple_files": {"paths": ["webapp/README.md", "webapp/package.json"]},
        "create_directory": {"path": "drafts"},
        "write_file": {"path": "drafts/notes.md", "content": "first draft\n"},
        "edit_file": {
            "path": "drafts/notes.md",
            "edits": [{"oldText": "first draft", "newText": "second draft"}],
        },
        "move_file": {"source": "drafts/notes.md", "destination": "drafts/final.md"},
    },
    "ref-memory": {
        "create_entities": {
            "entities": [{"name": "Ada", "entityType": "person", "observations": ["codes"]}]
        },
        "create_relations": {"relations": [{"from": "Ada", "to": "Ada", "relationType": "is"}]},
        "add_observations": {"observations": [{"entityName": "Ada", "contents": ["drinks tea"]}]},
        "read_graph": {},
        "search_nodes": {"query": "tea"},
        "open_nodes": {"names": ["Ada"]},
        "delete_observations": {
            "deletions": [{"entityName": "Ada", "observations": ["drinks tea"]}]
        },
        "delete_relations": {"relations": [{"from": "Ada", "to": "Ada", "relationType": "is"}]},
        "delete_entities": {"entityNames": ["Ada"]},
    },
    "ref-sqlite": {
        "list_tables": {},
        "describe_table": {"table_name": "products"},
        "read_query": {"query": "SELECT name FROM products WHERE price_eur > 100"},
        "create_table": {"query": "CREATE TABLE probe (id INTEGER PRIMARY KEY)"},
        "write_query": {"query": "INSERT INTO probe (id) VALUES (1)"},
        "append_insight": {"insight": "Kits sell slowly."},
    },
    "ref-time": {
        "get_current_time": {"timezone": "Asia/Tokyo"},
        "convert_time": {
            "source_timezone": "Asia/Kolkata",
            "time": "16:30",
            "target_timezone": "Asia/Tokyo",
        },
    },
    "ref-git": {
        "git_status": {"repo_path": "webapp"},
        "git_log": {"repo_path": "webapp", "max_count": 2},
        "git_show": {"repo_path": "webapp", "revision": "HEAD"},
        "git_diff": {"repo_path": "webapp", "target": "HEAD~1"},
        "git_branch": {"repo_path": "webapp", "branch_type": "all"},
        "git_create_branch": {"repo_path": "webapp", "branch_name": "probe"},
        "git_checkout": {"repo_path": "webapp", "branch_name": "probe"},
        "git_diff_unstaged": {"repo_path": "webapp"},
        "git_add": {"repo_path": "webapp", "files": ["notes.md"]},
        "git_diff_staged": {"repo_path": "webapp"},
        "git_commit": {"repo_path": "webapp", "message": "Add notes"},
        "git_reset": {"repo_path": "webapp"},
    },
}
EXPECTED_TEXT = {
    ("ref-filesystem", "read_text_file"): "Current version",
    ("ref-filesystem", "move_file"): "final.md",
    ("ref-time", "convert_time"): "20:00",
    ("ref-memory", "search_nodes"): "drinks tea",
    ("ref-sqlite", "read_query"): "Difference engine kit",
    ("ref-sqlite", "write_query"): "'affected_rows': 1",
    ("ref-git", "git_log"): HEAD,
    ("ref-git", "git_branch"): "feature/dark-mode",
    ("ref-git", "git_diff_staged"): "notes.md",
    ("ref-git", "git_commit"): "committed",
}


async def _probe(server: ServerDef, root: Path) -> tuple[set[str], dict[str, tuple[bool, str]]]:
    """Start the server as a worker would, list its tools and call each one in PROBES."""
    answers: dict[str, tuple[bool, str]] = {}
    async with anyio.create_task_group() as tg:
        pool = ServerPool(tg, root, start_timeout_s=30)
        live = await pool.acquire(server, [server.name])
        try:
            if live.sandbox is not None and server.name == "ref-git":
                (live.sandbox / "webapp" / "notes.md").write_text("to stage\n")
            with anyio.fail_after(60):
                for tool, arguments in PROBES[server.name].items():
                    result = await live.session.call_tool(tool, arguments)
                    text = result_text(result)
                    # A server that reports failures as text names them in its error_pattern.
                    told = bool(
                        server.error_pattern and re.search(server.error_pattern, text, re.M)
                    )
                    answers[tool] = (bool(result.is_error) or told, text)
        finally:
            pool.release(live, healthy=False)  # stop it: the probes changed its sandbox
            pool.close()
    return {t.name for t in live.tools}, answers


@pytest.mark.parametrize("name", sorted(PROBES))
def test_every_listed_tool_answers_through_our_client(name: str, tmp_path: Path) -> None:
    listed, answers = anyio.run(_probe, SERVERS[name], tmp_path)
    assert listed == set(PROBES[name]), "the server's tool list changed: update PROBES"
    errors = {tool: text[:200] for tool, (is_error, text) in answers.items() if is_error}
    assert errors == {}
    for (server, tool), text in EXPECTED_TEXT.items():
        if server == name:
            assert text in answers[tool][1], (tool, answers[tool][1][:300])
    used = {n for s in SCENARIOS if s.servers == [name] for step in s.all_steps for n in step.names}
    used |= {call.tool for s in SCENARIOS if s.servers == [name] for call in s.setup}
    assert used <= listed


def test_with_the_default_data_folder_the_memory_server_writes_in_the_trials_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's defaults, run from another working folder: `farm-data` is relative, and
    the memory server resolves a relative MEMORY_FILE_PATH against its own install folder, so
    the farm hands it an absolute one."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FARM_DATA_DIR", raising=False)
    settings = Settings(server_start_timeout_s=30)
    assert settings.data_dir == tmp_path / "farm-data"
    scenario = next(s for s in SCENARIOS if s.id == "ref.memory.tea")
    installed = REPO_ROOT / ".tools/node/node_modules/@modelcontextprotocol/server-memory"
    runtime = Runtime(settings)
    try:
        result = runtime.run(trial(scenario, ideal_script(scenario), suite="thirdparty"), settings)
        assert result.outcome == "pass", (result.detail, [c.error for c in result.tool_calls])
        # The warm server's sandbox keeps what the trial wrote until it is lent again.
        written = list((tmp_path / "farm-data" / "servers").glob("*/ref-memory-*/memory.jsonl"))
        assert len(written) == 1 and "tea" in written[0].read_text()
    finally:
        runtime.close()
    assert not list(installed.rglob("memory.jsonl"))
