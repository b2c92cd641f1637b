"""A cassette of a server that asks the user (MCP elicitation): capture records each exchange of
a call as an `elicit` event on its answer; served, the cassette sends the same request to the
client, so the scripted user answers as live, and gives the answer recorded after that reply;
a reply no recording got is a call the cassette never recorded. Version 2 cassettes still load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import CallToolResult, ElicitResult, TextContent

from mcp_farm.scenarios.cassette import Elicited, ElicitExchange, load_cassette, write_cassette
from mcp_farm.scenarios.cassette.serve import Served, followed
from mcp_farm.schema import ElicitAction, TrialResult
from tests.helpers import run_ideal_first

pytestmark = pytest.mark.integration

SUITE_TEXT = Path("scenarios/suites/conversations.yaml").read_text()
SCENARIO = (
    "scenarios:\n"
    + SUITE_TEXT[
        SUITE_TEXT.index("  - id: conv.office-delete-confirmed") : SUITE_TEXT.index(
            "  - id: conv.office-delete-declined"
        )
    ]
)
ACCEPT = "action: accept, content: {confirm: true}"
assert ACCEPT in SCENARIO  # the declining variant below replaces it
MESSAGE = "Delete old-logo.png? This cannot be undone."


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("recording")
    suite = folder / "live.yaml"
    suite.write_text(
        "suite: live\nservers:\n  - name: office\n"
        '    command: ["{python}", "-m", "mcp_farm.scenarios.servers.office"]\n'
        "    reset: {tool: reset_office}\n" + SCENARIO
    )
    result = run_ideal_first(folder, suite, capture_dir=folder / "cassettes")
    assert result.outcome == "pass", result.detail
    return folder / "cassettes" / "office.yaml"


def _replayed(recorded: Path, folder: Path, scenario: str) -> TrialResult:
    suite = folder / "taped.yaml"
    suite.write_text(
        f"suite: taped\nservers:\n  - name: office\n    replay: {recorded}\n{scenario}"
    )
    return run_ideal_first(folder, suite)


def test_capture_records_the_elicitation_during_a_call_as_an_event_on_its_answer(
    recorded: Path,
) -> None:
    cassette = load_cassette(recorded)
    assert cassette.cassette == 3
    [delete] = [c for c in cassette.calls if c.tool == "delete_file"]
    [answer] = delete.answers
    assert answer.content[0]["text"] == "Deleted old-logo.png."
    [event] = answer.events
    assert isinstance(event, Elicited)
    assert (event.elicit.message, event.elicit.action) == (MESSAGE, "accept")
    assert event.elicit.content == {"confirm": True}
    assert "confirm" in event.elicit.requested_schema["properties"]
    assert all(not a.events for c in cassette.calls if c.tool != "delete_file" for a in c.answers)
    assert "elicit:" in recorded.read_text()


def test_replayed_the_server_asks_the_scripted_user_again_and_answers_as_recorded(
    recorded: Path, tmp_path: Path
) -> None:
    result = _replayed(recorded, tmp_path, SCENARIO)
    assert result.outcome == "pass", result.detail
    assert not result.left_cassette
    assert result.tool_calls[1].result_text == "Deleted old-logo.png."
    assert [(e.server, e.call, e.message, e.action, e.content) for e in result.elicitations] == [
        ("office", 1, MESSAGE, "accept", {"confirm": True})
    ]


def test_a_round_trip_at_2026_07_28_is_captured_alike_and_replayed_as_a_request(
    tmp_path: Path,
) -> None:
    live = tmp_path / "live.yaml"
    live.write_text(
        "suite: live\nservers:\n  - name: office\n"
        '    command: ["{python}", "-m", "mcp_farm.scenarios.servers.office"]\n'
        '    protocol: "2026-07-28"\n    reset: {tool: reset_office}\n' + SCENARIO
    )
    captured = run_ideal_first(tmp_path, live, capture_dir=tmp_path / "cassettes")
    assert captured.outcome == "pass", captured.detail
    [delete] = [
        c
        for c in load_cassette(tmp_path / "cassettes" / "office.yaml").calls
        if c.tool == "delete_file"
    ]
    [event] = delete.answers[0].events
    assert isinstance(event, Elicited)
    assert (event.elicit.message, event.elicit.action) == (MESSAGE, "accept")
    (tmp_path / "replay").mkdir()
    result = _replayed(tmp_path / "cassettes" / "office.yaml", tmp_path / "replay", SCENARIO)
    assert result.outcome == "pass", result.detail
    assert [(e.message, e.action) for e in result.elicitations] == [(MESSAGE, "accept")]


def test_a_user_who_declines_where_the_cassette_recorded_accept_leaves_the_cassette(
    recorded: Path, tmp_path: Path
) -> None:
    declining = SCENARIO.replace(ACCEPT, "action: decline")
    result = _replayed(recorded, tmp_path, declining)
    assert result.left_cassette
    assert [e.action for e in result.elicitations] == ["decline"]
    delete = result.tool_calls[1]
    assert not delete.ok
    assert delete.error is not None and delete.error.startswith("not in cassette: delete_file")
    assert "the user declined where the cassette recorded accept" in delete.error
    assert MESSAGE in delete.error


def test_a_version_2_cassette_still_loads_and_an_elicit_event_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "office.yaml"
    path.write_text(
        "cassette: 2\nserver: office\ntools:\n  - name: delete_file\n"
        "calls:\n  - tool: delete_file\n    arguments: {name: a}\n"
        "    answers:\n      - content: [{type: text, text: gone}]\n"
    )
    old = load_cassette(path)
    assert old.cassette == 2
    event = Elicited.model_validate(
        {"elicit": {"message": "Sure?", "requested_schema": {"type": "object"}, "action": "cancel"}}
    )
    answer = old.calls[0].answers[0]
    asked = old.calls[0].model_copy(
        update={"answers": [answer.model_copy(update={"events": [event]})]}
    )
    write_cassette(old.model_copy(update={"calls": [asked]}), path)
    again = load_cassette(path)
    assert again.cassette == 3
    assert again.calls[0].answers[0].asks() == [event.elicit]
    assert not answer.same_as(again.calls[0].answers[0])  # a reply is part of what was answered


def _served(text: str, *replies: tuple[ElicitAction, dict[str, Any] | None]) -> Served:
    asks = [
        ElicitExchange(message="Sure?", action=action, content=content)
        for action, content in replies
    ]
    return Served(CallToolResult(content=[TextContent(type="text", text=text)]), None, asks)


def _followed(answers: list[Served], action: ElicitAction, content: dict[str, Any] | None) -> Any:
    async def ask(request: ElicitExchange) -> ElicitResult:
        assert request.message == "Sure?"
        return ElicitResult(action=action, content=content)

    return anyio.run(followed, answers, 0, ask)


def test_each_reply_is_answered_from_the_recording_made_after_the_same_reply() -> None:
    answers = [
        _served("kept 3", ("accept", {"n": 3})),
        _served("gone"),  # a later call's answer, which asked nothing
        _served("kept none", ("decline", None)),
    ]
    assert _followed(answers, "decline", None).result.content[0].text == "kept none"
    assert _followed(answers, "accept", {"n": 3}).result.content[0].text == "kept 3"
    assert _followed(answers, "accept", {"n": 4}) == (
        "the server asked 'Sure?', and the user accepted with {\"n\":4} where the cassette "
        'recorded {"n":3}'
    )
    assert _followed(answers, "cancel", None).endswith(
        "the user cancelled where the cassette recorded accept or decline"
    )
