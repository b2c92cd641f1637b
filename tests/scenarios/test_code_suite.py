"""The code suite: its pinned repository, its two competing code servers, the facts it grades."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from mcp_farm.scenarios import (
    FIXTURES_DIR,
    load_rubric,
    load_suite,
    servers_for,
)
from mcp_farm.scenarios.catalog import (
    structural_problems,
    suite_path,
)
from mcp_farm.scenarios.coderepo import (
    CodeRepoError,
    build_checkout,
    checkout,
)
from mcp_farm.schema import (
    Scenario,
    Suite,
    load_yaml_model,
)
from mcp_farm.workers.mcp.connections import result_text
from mcp_farm.workers.mcp.pool import (
    REPO_ROOT,
    ServerPool,
)
from tests.helpers import (
    free_port,
    wait_until_serving,
)

pytestmark = pytest.mark.integration
SUITE = load_suite("code")
SCENARIOS = SUITE.scenarios
SERVERS = servers_for("code")
FIXTURE = FIXTURES_DIR / "code" / "h11"
PINNED = "f40c9c3c3d9df91b2200641f3d236c2b487cddb2"
"""The commit the fixture builds; the suite pins it and answers are checked against it."""
CITATION = re.compile(r"(h11/\w+\.py):(\d+)(?:-(\d+))?")
INSTALLED = [
    ".tools/node/node_modules/.bin/mcp-server-filesystem",
    ".tools/py/bin/mcp-server-git",
]

# One call per tool with a text its result must contain; then calls that must fail.
CALLS: dict[str, dict[str, tuple[dict[str, Any], str]]] = {
    "code_search": {
        "search_text": ({"pattern": r"def _keep_alive\("}, "h11/_connection.py:84:"),
        "read_lines": ({"path": "h11/_util.py", "start": 117, "end": 117}, "v.__class__ = v"),
        "list_files": ({"folder": "h11"}, "h11/_connection.py\t659 lines"),
    },
    "code_symbols": {
        "find_definition": ({"symbol": "Connection.send"}, "h11/_connection.py:517-542"),
        "find_references": ({"symbol": "_body_framing"}, "Connection._get_io_object"),
        "outline": ({"path": "h11/_state.py"}, "356-365: method ConnectionState.start_next_cycle"),
        "read_symbol": ({"symbol": "_keep_alive"}, '86      if b"close" in connection:'),
    },
}
FAILURES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "code_search": [
        ("read_lines", {"path": "../../etc/passwd", "start": 1}),
        ("read_lines", {"path": "h11/_util.py", "start": 136}),
        ("search_text", {"pattern": "x", "path_glob": "*.js"}),
        ("list_files", {"folder": "nowhere"}),
    ],
    "code_symbols": [
        ("find_definition", {"symbol": "NoSuchThing"}),
        ("read_symbol", {"symbol": "__init__"}),  # many classes have one: ambiguous
        ("outline", {"path": "h11/missing.py"}),
    ],
}


def _require_reference_servers() -> None:
    missing = [p for p in INSTALLED if not (REPO_ROOT / p).exists()]
    if not missing:
        return
    message = f"reference MCP servers missing ({', '.join(missing)}): run scripts/setup.sh --dev"
    if os.environ.get("CI") == "true":  # CI must run these, never skip them
        pytest.fail(message)
    pytest.skip(message)


def _cited_lines(citation: str) -> tuple[Path, int, int]:
    match = CITATION.fullmatch(citation)
    assert match, f"not a path:line citation: {citation!r}"
    start = int(match.group(2))
    return FIXTURE / match.group(1), start, int(match.group(3) or start)


# ------------------------------------------------------------------ the suite itself


def test_the_suite_loads_without_structural_problems() -> None:
    suite = load_yaml_model(Suite, suite_path("code"))
    assert structural_problems(suite, "code.yaml") == []
    assert SUITE.repo is not None and SUITE.repo.fixture == "code/h11"
    assert SUITE.repo.commit == PINNED
    assert SUITE.rubric == "code-answer"
    load_rubric("code-answer")


def test_every_scenario_is_an_open_question_graded_on_its_prose() -> None:
    assert len(SCENARIOS) >= 15
    assert {s.tier for s in SCENARIOS} == {"simple", "moderate", "complex"}
    for scenario in SCENARIOS:
        assert scenario.open_tools and not scenario.expect, scenario.id
        assert scenario.servers == ["code-symbols"], scenario.id
        assert scenario.final_answer is None and scenario.example_answer, scenario.id
        assert len(scenario.paraphrases) == 2, scenario.id
        assert "code" in scenario.tags, scenario.id
        assert scenario.answer is not None and scenario.answer.reference, scenario.id
        assert 3 <= len(scenario.answer.keywords) <= 6, scenario.id
        assert scenario.answer.citations, scenario.id


def test_the_tool_sets_pit_both_code_servers_against_a_baseline() -> None:
    sets = {t.id: t for t in SUITE.toolsets}
    assert sets["baseline"].baseline and sets["baseline"].servers == []
    assert sets["search"].servers == ["code-search"]
    assert sets["symbols"].servers == ["code-symbols"]
    assert sets["reference"].servers == ["code-fs", "code-git"]
    assert [t.id for t in SUITE.toolsets if t.baseline] == ["baseline"]


def test_the_git_server_is_wrapped_with_the_suite_s_own_pin() -> None:
    command = SERVERS["code-git"].command or []
    assert command[command.index("--commit") + 1] == PINNED
    assert not SERVERS["code-git"].reuse
    assert all(SERVERS[n].sandbox == "code/h11" for n in ("code-search", "code-symbols"))


# ------------------------------------------------------------------ the pinned repository


def test_building_the_checkout_twice_gives_the_pinned_sha(tmp_path: Path) -> None:
    shas = [build_checkout(FIXTURE, tmp_path / name) for name in ("a", "b")]
    assert shas == [PINNED, PINNED]
    listed = subprocess.run(
        ["git", "-C", str(tmp_path / "a"), "ls-files"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "h11/_connection.py" in listed and "LICENSE.txt" in listed
    assert not any("tests" in p for p in listed)


def test_the_cached_checkout_is_built_once_and_reused(tmp_path: Path) -> None:
    first = checkout(FIXTURE, PINNED, tmp_path)
    marker = first / ".built-once"
    marker.write_text("")
    assert checkout(FIXTURE, PINNED, tmp_path) == first
    assert marker.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [PINNED]  # no scratch left behind


def test_a_checkout_that_builds_another_sha_names_both(tmp_path: Path) -> None:
    wrong = "0" * 40
    with pytest.raises(CodeRepoError, match=f"{PINNED}.*{wrong}"):
        checkout(FIXTURE, wrong, tmp_path)
    assert not (tmp_path / wrong).exists()


def _wrapper(sandbox: Path, commit: str, *command: str) -> subprocess.CompletedProcess[str]:
    shutil.copytree(FIXTURE, sandbox)
    argv = [sys.executable, str(REPO_ROOT / "scenarios" / "coderepo.py"), "--commit", commit]
    return subprocess.run(
        [*argv, str(sandbox), "--", *command], capture_output=True, text=True, timeout=60
    )


def test_the_wrapper_runs_its_command_inside_a_checkout_of_the_pin(tmp_path: Path) -> None:
    done = _wrapper(tmp_path / "box", PINNED, "git", "rev-parse", "HEAD")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == PINNED


def test_the_wrapper_refuses_to_start_on_another_commit(tmp_path: Path) -> None:
    wrong = "1" * 40
    done = _wrapper(tmp_path / "box", wrong, "git", "rev-parse", "HEAD")
    assert done.returncode != 0
    assert PINNED in done.stderr and wrong in done.stderr
    assert done.stdout == ""


# ------------------------------------------------------------------ answers and their facts


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_every_expected_citation_points_inside_a_fixture_file(scenario: Scenario) -> None:
    assert scenario.answer is not None
    for citation in scenario.answer.citations:
        path, start, end = _cited_lines(citation)
        assert path.is_file(), citation
        lines = path.read_text(encoding="utf-8").splitlines()
        assert 1 <= start <= end <= len(lines), (citation, len(lines))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_every_example_answer_has_the_keywords_and_cites_real_lines(scenario: Scenario) -> None:
    assert scenario.answer is not None and scenario.example_answer
    prose = scenario.example_answer.lower()
    for keyword in scenario.answer.keywords:
        assert any(alt.lower() in prose for alt in keyword.split("|")), keyword
    cited = [m.group(0) for m in CITATION.finditer(scenario.example_answer)]
    assert cited, "an ideal answer cites path:line"
    for citation in cited:
        path, _start, end = _cited_lines(citation)
        assert end <= len(path.read_text(encoding="utf-8").splitlines()), citation


def test_the_anchors_are_distinct_scenarios_graded_on_every_criterion() -> None:
    folder = REPO_ROOT / "scenarios" / "anchors" / "code"
    anchors = [json.loads(p.read_text()) for p in sorted(folder.glob("anchor-*.json"))]
    gold = yaml.safe_load((folder / "gold.yaml").read_text())["anchors"]
    rubric, _sha = load_rubric("code-answer")
    prompts = {s.id: " ".join(s.prompt.split()) for s in SCENARIOS}
    assert len(anchors) >= 3
    assert len({a["scenario"] for a in anchors}) == len(anchors)
    totals = []
    for anchor in anchors:
        assert anchor["request"] == prompts[anchor["scenario"]], anchor["id"]
        scores = gold[anchor["id"]]
        assert set(scores) == {c.id for _step, c in rubric.criteria}, anchor["id"]
        for _step, criterion in rubric.criteria:
            value = scores[criterion.id]
            assert isinstance(value, int) and 0 <= value <= criterion.scale, anchor["id"]
        totals.append(sum(scores.values()))
    assert max(totals) - min(totals) >= len(rubric.criteria) * 2  # clearly different quality


# ------------------------------------------------------------------ the two code servers


def _argv(name: str, repo: Path) -> list[str]:
    module = f"mcp_farm.scenarios.servers.code.{name.removeprefix('code_')}"
    return [sys.executable, "-m", module, "--repo", str(repo)]


@asynccontextmanager
async def _stdio(name: str, repo: Path) -> AsyncIterator[Client]:
    argv = _argv(name, repo)
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=REPO_ROOT)
    async with Client(params) as client:
        yield client


async def _exercise(client: Client, name: str) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(CALLS[name]), "a tool without a check, or a check without a tool"
    assert all(t.annotations and t.annotations.read_only_hint for t in tools.values())
    assert all(t.description for t in tools.values())
    with anyio.fail_after(60):
        for tool, (arguments, expected) in CALLS[name].items():
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, (tool, result_text(result))
            assert expected in result_text(result), (tool, result_text(result)[:500])
        for tool, arguments in FAILURES[name]:
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments, result_text(result)[:300])


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_code_server_tool_answers_over_stdio(name: str, tmp_path: Path) -> None:
    repo = Path(shutil.copytree(FIXTURE, tmp_path / "h11"))

    async def go() -> None:
        async with _stdio(name, repo) as client:
            await _exercise(client, name)

    anyio.run(go)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_code_server_tool_answers_over_streamable_http(name: str, tmp_path: Path) -> None:
    repo = Path(shutil.copytree(FIXTURE, tmp_path / "h11"))
    port = free_port()
    argv = [*_argv(name, repo), "--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(argv, cwd=REPO_ROOT, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until_serving(url, proc, 30, f"the HTTP {name} server")

        async def go() -> None:
            async with Client(url) as client:
                await _exercise(client, name)

        anyio.run(go)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_references_name_the_calling_function_and_skip_typing_overloads() -> None:
    async def go() -> tuple[str, str]:
        async with _stdio("code_symbols", FIXTURE) as client:
            refs = await client.call_tool("find_references", {"symbol": "get_comma_header"})
            send = await client.call_tool("read_symbol", {"symbol": "Connection.send"})
            return result_text(refs), result_text(send)

    refs, send = anyio.run(go)
    assert "h11/_headers.py:281 [in has_expect_100_continue] (call):" in refs
    assert "h11/_connection.py:279 [in Connection._process_event] (call):" in refs
    assert send.startswith("h11/_connection.py:517-542")  # the body, not one of its overloads


# ------------------------------------------------ the suite's servers, started as the farm does


async def _first_answers(
    name: str, root: Path, calls: dict[str, dict[str, Any]]
) -> tuple[set[str], dict[str, str]]:
    """Start a suite server through the worker's pool and call the given tools once."""
    texts: dict[str, str] = {}
    async with anyio.create_task_group() as tg:
        pool = ServerPool(tg, root, start_timeout_s=30)
        live = await pool.acquire(SERVERS[name], [name])
        try:
            with anyio.fail_after(60):
                for tool, arguments in calls.items():
                    result = await live.session.call_tool(tool, arguments)
                    assert not result.is_error, (tool, result_text(result))
                    texts[tool] = result_text(result)
        finally:
            pool.release(live, healthy=False)
            pool.close()
    return {t.name for t in live.tools}, texts


def test_the_git_server_starts_on_a_checkout_showing_the_pinned_commit(tmp_path: Path) -> None:
    _require_reference_servers()
    listed, texts = anyio.run(
        _first_answers, "code-git", tmp_path, {"git_log": {"repo_path": ".", "max_count": 1}}
    )
    assert "git_log" in listed
    assert PINNED in texts["git_log"]
    assert "Pinned source snapshot" in texts["git_log"]


def test_the_filesystem_server_reads_the_repository_by_relative_path(tmp_path: Path) -> None:
    _require_reference_servers()
    calls = {"read_text_file": {"path": "h11/_version.py", "tail": 2}}
    _listed, texts = anyio.run(_first_answers, "code-fs", tmp_path, calls)
    assert '__version__ = "0.16.0"' in texts["read_text_file"]


@pytest.mark.parametrize(
    ("name", "tool", "arguments"),
    [
        ("code-search", "search_text", {"pattern": "class Connection:"}),
        ("code-symbols", "find_definition", {"symbol": "Connection"}),
    ],
)
def test_the_suite_starts_each_code_server_on_its_sandbox(
    name: str, tool: str, arguments: dict[str, Any], tmp_path: Path
) -> None:
    _listed, texts = anyio.run(_first_answers, name, tmp_path, {tool: arguments})
    assert "h11/_connection.py:151" in texts[tool]
