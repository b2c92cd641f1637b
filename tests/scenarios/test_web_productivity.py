"""The web-search, notes, calendar, email and gaia fixture servers and the suites built on them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

from mcp_farm.scenarios import (
    FIXTURES_DIR,
    load_suite,
)
from mcp_farm.schema import (
    CONTROL_META,
    Scenario,
    Settings,
)
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import (
    free_port,
    ideal_call_problems,
    ideal_script,
    trial,
    wait_until_serving,
)

pytestmark = pytest.mark.integration
SUITES = {name: load_suite(name).scenarios for name in ("web", "productivity")}
ALL = [(suite, s) for suite, scenarios in SUITES.items() for s in scenarios]
REPO = Path(__file__).resolve().parents[2]

# Each server's fixture folder (None: no sandbox), its extra arguments, and one call per tool
# with a text its result must contain ("!" first: the call must fail with that text).
SERVERS: dict[str, tuple[str | None, list[str], dict[str, tuple[dict[str, Any], str]]]] = {
    "web_search": (
        None,
        [],
        {
            "search": ({"query": "latest Tessera release"}, "tessera-4-1-released"),
            "fetch": ({"url": "tessera.dev/blog/tessera-4-1-released/"}, "CVE-2026-1187"),
            "search_news": ({"query": "Tessera funding"}, "Series B"),
            "fetch_cached": (
                {"url": "https://tessera.dev/blog/tessera-4-1-released"},
                "!no archived copy",
            ),
        },
    ),
    "notes": (
        "notes",
        [],
        {
            "list_notes": ({"tag": "travel"}, "lisbon-trip"),
            "read_note": ({"note_id": "groceries"}, "red lentils"),
            "search_notes": ({"query": "wifi password"}, "azulejo-2026"),
            "create_note": ({"title": "Book club picks", "content": "Piranesi"}, "book-club-picks"),
            "append_to_note": ({"note_id": "groceries", "text": "- oat milk"}, "groceries"),
            "update_note": ({"note_id": "gift-ideas", "content": "nothing yet"}, "replaced"),
        },
    ),
    "calendar": (
        "calendar",
        [],
        {
            "list_events": ({"start_date": "2026-03-12"}, "Dentist"),
            "create_event": (
                {"title": "Call", "start": "2026-03-12T15:00", "end": "2026-03-12T15:30"},
                "overlaps Dentist",
            ),
            "find_free_slot": ({"date": "2026-03-12", "duration_minutes": 60}, "13:30–15:00"),
            "cancel_event": ({"event_id": "evt-1013"}, "cancelled evt-1013"),
            "find_meeting_time": (
                {"attendees": ["jonas.berg@tessera.dev"], "date": "2026-03-13"},
                "from 12:00",
            ),
        },
    ),
    "email": (
        "mail",
        [],
        {
            "list_inbox": ({"unread_only": True}, "msg-1042"),
            "read_email": ({"email_id": "msg-1042"}, "Taberna do Mar"),
            "search_email": ({"query": "Northwind invoice"}, "msg-1044"),
            "send_email": (
                {"to": "Priya Nair <priya.nair@gmail.com>", "subject": "Hi", "body": "Hello"},
                "sent sent-0008 to priya.nair@gmail.com",
            ),
            "reply_to_email": ({"email_id": "msg-1040", "body": "13:30?"}, "marco.rossi@"),
            "draft_reply": ({"email_id": "msg-1040", "body": "13:30?"}, "not sent"),
        },
    ),
    # One session, calls in this order: the list lives in the process's memory.
    "reminders": (
        None,
        [],
        {
            "add_reminder": ({"text": "Buy stamps", "due": "2026-03-12"}, "r1  [ ] Buy stamps"),
            "list_reminders": ({}, "(due 2026-03-12)"),
            "complete_reminder": ({"reminder_id": "r1"}, "done: r1  [x]"),
            "clear_reminders": ({}, "all reminders deleted"),
        },
    ),
    "gaia": (
        None,
        ["--attached", "gaia,notes"],
        {
            "list_mcp_servers": ({}, "notes"),
            "server_status": ({"name": "notes"}, "notes: connected"),
            "list_tools": ({"server": "notes"}, "append_to_note"),
            "list_available_servers": ({}, "notes (connected)"),
        },
    ),
}
READ_ONLY = {
    "web_search": {"search", "fetch", "search_news", "fetch_cached"},
    "notes": {"list_notes", "read_note", "search_notes"},
    "calendar": {"list_events", "find_free_slot", "find_meeting_time"},
    "email": {"list_inbox", "read_email", "search_email"},
    "gaia": {"list_mcp_servers", "server_status", "list_tools", "list_available_servers"},
    "reminders": {"list_reminders"},
}
DISTRACTORS = {"search_news", "fetch_cached", "update_note", "find_meeting_time", "draft_reply"}
DISTRACTORS |= {"list_available_servers"}
DISTRACTORS |= {"clear_reminders"}  # the reminders server's reset call: never the model's to make


def _argv(name: str, root: Path) -> list[str]:
    fixture, extra, _calls = SERVERS[name]
    argv = [sys.executable, "-m", f"mcp_farm.scenarios.servers.{name}", *extra]
    if fixture is not None:
        shutil.copytree(FIXTURES_DIR / fixture, root / fixture)
        argv += ["--root", str(root / fixture)]
    return argv


@asynccontextmanager
async def _client(name: str, transport: str, root: Path) -> AsyncIterator[Client]:
    argv = _argv(name, root)
    if transport == "stdio":
        params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=REPO)
        async with Client(params) as client:
            yield client
        return
    port = free_port()
    proc = subprocess.Popen(
        [*argv, "--transport", "http", "--port", str(port)], cwd=REPO, stderr=subprocess.DEVNULL
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_until_serving(url, proc, 30, f"the HTTP {name} server")
        async with Client(url) as client:
            yield client
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("name", list(SERVERS))
def test_every_tool_answers_through_the_sdk_client(
    name: str, transport: str, tmp_path: Path
) -> None:
    calls = SERVERS[name][2]

    async def go() -> None:
        async with _client(name, transport, tmp_path) as client:
            listed = (await client.list_tools()).tools
            # The farm's own control tools (state snapshots) are listed for the farm only.
            tools = {t.name: t for t in listed if not (t.meta or {}).get(CONTROL_META)}
            assert set(tools) == set(calls)
            read_only = {
                n for n, t in tools.items() if t.annotations and t.annotations.read_only_hint
            }
            assert read_only == READ_ONLY[name]
            for tool, (arguments, expected) in calls.items():
                result = await client.call_tool(tool, arguments)
                text = _text(result)
                assert result.is_error == expected.startswith("!"), (tool, text)
                assert expected.lstrip("!") in text, (tool, text)

    anyio.run(go)


def test_bad_arguments_are_tool_errors_not_crashes(tmp_path: Path) -> None:
    async def go() -> None:
        async with _client("calendar", "stdio", tmp_path) as client:
            bad = await client.call_tool("list_events", {"start_date": "next thursday"})
            assert bad.is_error and "2026-03-12" in _text(bad)
            gone = await client.call_tool("cancel_event", {"event_id": "evt-9999"})
            assert gone.is_error
            ok = await client.call_tool("list_events", {"start_date": "2026-03-12"})
            assert not ok.is_error  # the server survived both errors

    anyio.run(go)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, Settings]]:
    root = tmp_path_factory.mktemp("farm")
    settings = Settings(
        data_dir=root / "data",
        database_url=f"sqlite:///{root / 'data' / 'farm.sqlite'}",
        server_start_timeout_s=20.0,
    )
    rt = Runtime(settings)
    try:
        yield rt, settings
    finally:
        rt.close()


def _find(suite: str, scenario_id: str) -> Scenario:
    return next(s for s in SUITES[suite] if s.id == scenario_id)


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"call": {"name": name, "arguments": arguments}}


@pytest.mark.parametrize(
    ("scenario_id", "write", "read", "written"),
    [
        (
            "notes.book-club",
            _call("create_note", title="Book club picks", content="Piranesi"),
            _call("list_notes"),
            "book-club-picks",
        ),
        (
            "cal.block-focus",
            _call("create_event", title="Focus", start="2026-03-16T14:00", end="2026-03-16T17:00"),
            _call("list_events", start_date="2026-03-16"),
            "Focus",
        ),
        (
            "mail.late-for-lunch",
            _call("send_email", to="priya.nair@gmail.com", subject="Late", body="10 min late"),
            _call("search_email", query="10 min late"),
            "sent-0008",
        ),
    ],
)
def test_writes_in_one_trial_are_not_seen_by_the_next(
    runtime: tuple[Runtime, Settings],
    scenario_id: str,
    write: dict[str, Any],
    read: dict[str, Any],
    written: str,
) -> None:
    rt, settings = runtime
    scenario = _find("productivity", scenario_id)
    spec = trial(scenario, [write, read, {"answer": "done"}], suite="productivity")
    first = rt.run(spec, settings)
    started = rt.pool.started
    assert [c.ok for c in first.tool_calls] == [True, True]
    assert written in first.tool_calls[1].result_text  # the write happened and is visible
    spec = trial(scenario, [read, {"answer": "done"}], suite="productivity", repetition=1)
    second = rt.run(spec, settings)
    assert rt.pool.started == started  # the same warm server served both trials
    assert second.tool_calls[0].ok
    assert written not in second.tool_calls[0].result_text


@pytest.mark.parametrize("mode", ["native", "json"])
@pytest.mark.parametrize(("suite", "scenario"), ALL, ids=[s.id for _suite, s in ALL])
def test_an_ideal_scripted_agent_passes(
    suite: str, scenario: Scenario, mode: str, runtime: tuple[Runtime, Settings]
) -> None:
    rt, settings = runtime
    result = rt.run(trial(scenario, ideal_script(scenario), suite=suite, prompt=mode), settings)
    assert result.outcome == "pass", (result.detail, [c.error for c in result.tool_calls])
    assert [c.tool for c in result.tool_calls] == scenario.expected_tools
    assert ideal_call_problems(scenario, result) == []
    assert all(c.result_digest for c in result.tool_calls)


def test_the_suites_are_complete() -> None:
    tiers = Counter(s.tier for _suite, s in ALL)
    assert tiers["simple"] >= 6 and tiers["moderate"] >= 9 and tiers["complex"] >= 11
    used = Counter(name for _suite, s in ALL for step in s.expect for name in step.names)
    tools = {t for _fixture, _extra, calls in SERVERS.values() for t in calls}
    assert {t for t in tools - DISTRACTORS if used[t] < 2} == set()
    assert not DISTRACTORS & set(used)  # a distractor is never the right answer
    assert sum(1 for _suite, s in ALL if not s.expect) >= 2
    for _suite, s in ALL:
        assert len(s.paraphrases) == 2, s.id
        assert s.example_answer and all(step.example is not None for step in s.expect), s.id
        if s.final_answer:
            assert re.search(s.final_answer, s.example_answer, re.IGNORECASE), s.id


@pytest.mark.parametrize(
    ("suite", "scenario_id", "script", "expected"),
    [
        # The near-miss distractor instead of the right tool.
        (
            "productivity",
            "notes.add-groceries",
            [_call("update_note", note_id="groceries", content="- oat milk\n- coffee")],
            "wrong_tool",
        ),
        (
            "web",
            "web.latest-whats-new",
            [
                _call("search", query="Tessera newest release"),
                _call("fetch_cached", url="https://tessera.dev/blog/tessera-4-0-released"),
            ],
            "wrong_tool",
        ),
        (
            "productivity",
            "cross.marco-email-reply-conditional",
            [
                _call("search_email", query="Marco"),
                _call("read_email", email_id="msg-1040"),
                _call("find_free_slot", date="2026-03-12"),
                _call("draft_reply", email_id="msg-1040", body="13:30?"),
            ],
            "wrong_tool",
        ),
        # The right tools with the wrong thing picked from the results.
        (
            "productivity",
            "cal.cancel-dentist",
            [
                _call("list_events", start_date="2026-03-12"),
                _call("cancel_event", event_id="evt-1012"),
            ],
            "wrong_params",
        ),
        (
            "web",
            "web.latest-whats-new",
            [
                _call("search", query="Tessera newest release"),
                _call("fetch", url="https://tessera.dev/blog/tessera-4-0-released"),
            ],
            "wrong_params",
        ),
        (
            "productivity",
            "cross.marco-call-conditional",
            [
                _call("find_free_slot", date="2026-03-12"),
                _call(
                    "create_event",
                    title="Call with Marco",
                    start="2026-03-12T15:00",
                    end="2026-03-12T15:30",
                ),
            ],
            "wrong_params",
        ),
        # A chained argument that does not come from the earlier result.
        (
            "productivity",
            "cross.priya-dinner-event",
            [
                _call("search_email", query="Priya"),
                _call("read_email", email_id="msg-1042"),
                _call(
                    "create_event",
                    title="Dinner with Priya",
                    start="2026-03-13T19:30",
                    end="2026-03-13T21:30",
                    location="Café Lumen",
                ),
            ],
            "wrong_params",
        ),
        # A step skipped, and a tool called where none should be.
        (
            "productivity",
            "mail.invoice-due",
            [_call("read_email", email_id="msg-1044")],
            "wrong_sequence",
        ),
        ("web", "web.no-tool-mcp-acronym", [_call("search", query="MCP meaning")], "wrong_tool"),
    ],
)
def test_plausible_mistakes_do_not_pass(
    suite: str,
    scenario_id: str,
    script: list[dict[str, Any]],
    expected: str,
    runtime: tuple[Runtime, Settings],
) -> None:
    rt, settings = runtime
    scenario = _find(suite, scenario_id)
    answer = {"answer": scenario.example_answer or "done"}
    result = rt.run(trial(scenario, [*script, answer], suite=suite, prompt="json"), settings)
    assert result.outcome == expected, result.detail
