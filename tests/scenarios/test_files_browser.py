"""The filesystem and browser fixture servers, and the files/browse suites played through them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult

from mcp_farm.scenarios import (
    FIXTURES_DIR,
    load_suite,
)
from mcp_farm.schema import (
    Scenario,
    Settings,
)
from mcp_farm.workers.trial import execute_trial
from tests.helpers import (
    free_port,
    ideal_call_problems,
    ideal_script,
    trial,
    wait_until_serving,
)

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parent.parent.parent

# One call per tool, with a piece of text its answer must contain. A tool added to a server
# without an entry here fails the listing check below.
FILESYSTEM_CALLS: dict[str, tuple[dict[str, Any], str]] = {
    "list_directory": ({"path": "/Downloads"}, "weather-stations-2026.csv\t9176 bytes"),
    "read_file": ({"path": "~/Desktop/todo.txt"}, "renew passport"),
    "write_file": ({"path": "Desktop/note.txt", "content": "hello"}, "wrote 5 bytes"),
    "search_files": ({"pattern": "*.m3u"}, "/Music/playlists/road-trip.m3u"),
    "search_file_contents": ({"query": "wifi password"}, "/Documents/travel/lisbon-itinerary.md:"),
    "get_file_info": ({"path": "Downloads/weather-stations-2026.csv"}, "file, 9176 bytes"),
    "move_file": (
        {"source": "/Desktop/ideas.md", "destination": "/Documents"},
        "moved /Desktop/ideas.md to /Documents/ideas.md",
    ),
    "copy_file": (
        {"source": "Documents/recipes", "destination": "Desktop/recipes-copy"},
        "copied /Documents/recipes to /Desktop/recipes-copy",
    ),
    "create_directory": ({"path": "Documents/Taxes 2025/receipts"}, "created /Documents/Taxes"),
    "list_files_recursive": ({"path": "/Documents"}, "travel/lisbon-itinerary.md"),
    "read_file_metadata": ({"path": "Documents/travel/lisbon-itinerary.md"}, "author: Sam Rivera"),
    "find_in_files": ({"text": "Priya", "path": "/Desktop"}, "todo.txt: 1"),
}
FILESYSTEM_WRITERS = {"write_file", "move_file", "copy_file", "create_directory"}
FILESYSTEM_FAILURES: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "../../etc/passwd"}),
    ("read_file", {"path": "Desktop/no-such-file.txt"}),
    ("move_file", {"source": "Desktop/todo.txt", "destination": "Desktop/meeting-notes.md"}),
    ("copy_file", {"source": "Desktop/todo.txt", "destination": "Nowhere/todo.txt"}),
    ("search_file_contents", {"query": "  ?! "}),
]

DOCS = "https://docs.kestrel.test"
BROWSER_CALLS: dict[str, tuple[dict[str, Any], str]] = {
    "navigate": ({"url": f"{DOCS}/"}, "Title: Home · Kestrel documentation"),
    "get_page_text": ({"url": "docs.kestrel.test/contact"}, "support@kestrel.test"),
    "find_links": (
        {"url": f"{DOCS}/changelog", "contains": "release notes"},
        f"Release notes for 3.2.0 -> {DOCS}/releases/3.2.0",
    ),
    "click_link": ({"url": f"{DOCS}/", "link_text": "faq"}, "S3-compatible"),
    "list_bookmarks": ({}, "https://status.kestrel.test/"),
    "get_page_source": ({"url": "https://status.kestrel.test/"}, "<td>Sync relay</td>"),
    "extract_links_from_text": (
        {"text": "See https://docs.kestrel.test/faq, or mail us."},
        "https://docs.kestrel.test/faq",
    ),
}
BROWSER_FAILURES: list[tuple[str, dict[str, Any]]] = [
    ("get_page_text", {"url": "https://www.example.com/"}),
    ("get_page_text", {"url": f"{DOCS}/no-such-page"}),
    ("navigate", {"url": "ftp://docs.kestrel.test/"}),
    ("click_link", {"url": f"{DOCS}/", "link_text": "pricing"}),
    ("click_link", {"url": f"{DOCS}/contact", "link_text": "support@kestrel.test"}),
]

SERVERS: dict[
    str, tuple[dict[str, tuple[dict[str, Any], str]], list[tuple[str, dict[str, Any]]]]
] = {
    "filesystem": (FILESYSTEM_CALLS, FILESYSTEM_FAILURES),
    "browser": (BROWSER_CALLS, BROWSER_FAILURES),
}


def _text(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def _argv(name: str, home: Path) -> list[str]:
    argv = [sys.executable, "-m", f"mcp_farm.scenarios.servers.{name}"]
    return argv + (["--root", str(home)] if name == "filesystem" else [])


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh copy of the home fixture, as the farm makes for every trial."""
    return Path(shutil.copytree(FIXTURES_DIR / "home", tmp_path / "home"))


@asynccontextmanager
async def _stdio(name: str, home: Path) -> AsyncIterator[Client]:
    argv = _argv(name, home)
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=ROOT)
    async with Client(params) as client:
        yield client


@pytest.fixture
def http_url(request: pytest.FixtureRequest, home: Path) -> Iterator[str]:
    """The named server started with `--transport http` on a free port; its MCP endpoint."""
    port = free_port()
    argv = [*_argv(request.param, home), "--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(argv, cwd=ROOT, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until_serving(url, proc, 30, f"the HTTP {request.param} server")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def _exercise(client: Client, name: str) -> None:
    calls, failures = SERVERS[name]
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == set(calls), f"{name}: tools without a check, or checks without a tool"
    for tool, (arguments, expected) in calls.items():
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, (tool, _text(result))
        assert expected in _text(result), (tool, _text(result))
    for tool, arguments in failures:
        result = await client.call_tool(tool, arguments)
        assert result.is_error, (tool, arguments, _text(result))
    if name == "filesystem":
        writers = {t for t, spec in listed.items() if not _read_only(spec)}
        assert writers == FILESYSTEM_WRITERS
    else:
        assert all(_read_only(spec) for spec in listed.values())


def _read_only(tool: Any) -> bool:
    return bool(tool.annotations and tool.annotations.read_only_hint)


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_every_tool_answers_over_stdio(name: str, home: Path) -> None:
    async def go() -> None:
        async with _stdio(name, home) as client:
            await _exercise(client, name)

    anyio.run(go)


@pytest.mark.parametrize("http_url", sorted(SERVERS), indirect=True)
def test_every_tool_answers_over_streamable_http(
    http_url: str, request: pytest.FixtureRequest
) -> None:
    name = request.node.callspec.params["http_url"]

    async def go() -> None:
        async with Client(http_url) as client:
            await _exercise(client, name)

    anyio.run(go)


def test_writes_stay_inside_the_sandbox_and_change_it(home: Path) -> None:
    async def go() -> None:
        async with _stdio("filesystem", home) as client:
            await _exercise(client, "filesystem")

    anyio.run(go)
    assert (home / "Desktop" / "note.txt").read_text() == "hello"
    assert (home / "Documents" / "ideas.md").exists()
    assert not (home / "Desktop" / "ideas.md").exists()
    assert (home / "Desktop" / "recipes-copy" / "lentil-soup.txt").exists()
    assert (home / "Documents" / "Taxes 2025" / "receipts").is_dir()
    # The fixture itself is untouched: every trial gets it as it was.
    assert (FIXTURES_DIR / "home" / "Desktop" / "ideas.md").exists()
    assert not (FIXTURES_DIR / "home" / "Desktop" / "note.txt").exists()


def test_the_largest_download_is_unambiguous() -> None:
    downloads = sorted(
        (p.stat().st_size, p.name) for p in (FIXTURES_DIR / "home" / "Downloads").iterdir()
    )
    (size, name), (runner_up, _) = downloads[-1], downloads[-2]
    assert name == "weather-stations-2026.csv"
    assert size > 1.5 * runner_up


# ---- the suites, played by an agent that does exactly what each scenario expects

SUITES = {name: load_suite(name).scenarios for name in ("files", "browse")}
CASES = [(suite, s) for suite, scenarios in SUITES.items() for s in scenarios]


def test_the_suites_cover_every_tier_and_tool() -> None:
    scenarios = [s for _suite, s in CASES]
    tiers = [s.tier for s in scenarios]
    assert (tiers.count("simple"), tiers.count("moderate"), tiers.count("complex")) >= (6, 8, 12)
    assert sum(1 for s in scenarios if not s.expect) >= 2
    expected = [c.tool for s in [*scenarios, *load_suite("basic").scenarios] for c in s.expect]
    distractors = {"list_files_recursive", "read_file_metadata", "find_in_files"}
    distractors |= {"get_page_source", "extract_links_from_text"}
    for tool in (set(FILESYSTEM_CALLS) | set(BROWSER_CALLS)) - distractors:
        assert expected.count(tool) >= 2, tool
    for s in scenarios:
        assert distractors.isdisjoint(s.allowed_extra) and distractors.isdisjoint(
            s.expected_tools
        ), s.id
        assert len(s.paraphrases) == 2 and s.example_answer, s.id
        assert all(step.example is not None for step in s.expect), s.id


@pytest.mark.parametrize("mode", ["native", "json"])
@pytest.mark.parametrize(
    ("suite", "scenario"), CASES, ids=[f"{suite}:{s.id}" for suite, s in CASES]
)
def test_an_ideal_scripted_agent_passes(
    suite: str, scenario: Scenario, mode: str, settings: Settings
) -> None:
    spec = trial(scenario, ideal_script(scenario), suite=suite, prompt=mode)
    result = anyio.run(execute_trial, spec, settings)
    assert result.outcome == "pass", (result.detail, [c.error for c in result.tool_calls])
    assert [c.tool for c in result.tool_calls] == scenario.expected_tools
    assert ideal_call_problems(scenario, result) == []
    assert all(c.result_digest for c in result.tool_calls)


@pytest.mark.parametrize(
    ("suite", "scenario_id", "call"),
    [
        (
            "files",
            "files.expenses-size",
            ("read_file_metadata", {"path": "Documents/household-expenses-2025.csv"}),
        ),
        ("files", "files.dentist-appointment", ("find_in_files", {"text": "dentist", "path": "/"})),
        ("browse", "browse.latest-version", ("get_page_source", {"url": f"{DOCS}/changelog"})),
    ],
)
def test_a_near_miss_tool_is_graded_wrong_tool(
    suite: str, scenario_id: str, call: tuple[str, dict[str, Any]], settings: Settings
) -> None:
    scenario = next(s for s in SUITES[suite] if s.id == scenario_id)
    script: list[dict[str, Any]] = [
        {"call": {"name": call[0], "arguments": call[1]}},
        {"answer": scenario.example_answer},
    ]
    result = anyio.run(execute_trial, trial(scenario, script, suite=suite), settings)
    assert result.outcome == "wrong_tool", result.detail
    assert result.tool_calls[0].ok  # the tool worked; choosing it was the mistake
