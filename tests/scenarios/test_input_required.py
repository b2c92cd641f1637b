"""Servers that ask the user through the `input_required` round trip (protocol 2026-07-28):
the office server with its session opened at that version answers a call with its question,
the scripted user's reply goes back with the call sent again, and the exchange is kept on the
trial as an elicitation/create one is; over stdio and streamable HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import ElicitRequest, InputRequiredResult, TextContent
from pydantic import ValidationError

from mcp_farm.scenarios import load_suite, servers_for
from mcp_farm.schema import ElicitAnswer, Scenario, ServerDef, Settings, TrialResult
from mcp_farm.workers.mcp.connections import connect
from mcp_farm.workers.mcp.pool import ServerPool
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import ideal_script, served_over_http, trial

pytestmark = pytest.mark.integration

SERVER = "mcp_farm.scenarios.servers.office"
SUITE_TEXT = Path("scenarios/suites/conversations.yaml").read_text()
MESSAGE = "Delete old-logo.png? This cannot be undone."
# Each scenario, and its exchanges' (action, scripted) at the legacy office too.
ASKED = {
    "conv.office-delete-confirmed": [("accept", True)],
    "conv.office-delete-declined": [("decline", True)],
    "conv.office-book-room-cancelled": [("cancel", True)],
    "conv.office-delete-unscripted": [("decline", False)],
}


def _body(scenario_id: str, server: str) -> str:
    """A conversations scenario's YAML, attached to `server` instead of the office."""
    start = SUITE_TEXT.index(f"  - id: {scenario_id}\n")
    end = SUITE_TEXT.find("\n  - id: ", start + 1)
    body = SUITE_TEXT[start : end + 1 if end != -1 else None]
    return body.replace("servers: [office]", f"servers: [{server}]")


def _scenario(folder: Path, scenario_id: str, server: str, servers: str = "") -> Scenario:
    path = folder / "asks.yaml"
    path.write_text(f"suite: asks\n{servers}scenarios:\n{_body(scenario_id, server)}")
    return load_suite(str(path)).scenarios[0]


def _run(
    warm: tuple[Runtime, Settings],
    scenario: Scenario,
    folder: Path,
    script: list[dict[str, Any]] | None = None,
) -> TrialResult:
    runtime, settings = warm
    spec = trial(scenario, script or ideal_script(scenario), suite=str(folder / "asks.yaml"))
    return runtime.run(spec, settings)


def test_the_session_speaks_2026_07_28_and_the_call_is_answered_with_the_question(
    tmp_path: Path,
) -> None:
    office = servers_for("conversations")["office_2026"]
    assert office.protocol == "2026-07-28"
    confirm = ElicitAnswer(message="delete", action="accept", content={"confirm": True})

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            pool = ServerPool(tg, tmp_path / "pool", 30)
            async with connect([office], pool, "plain") as conn:
                session = conn.sessions["office_2026"]
                assert session.protocol_version == "2026-07-28"
                first = await session.call_tool(
                    "delete_file", {"name": "old-logo.png"}, allow_input_required=True
                )
                assert isinstance(first, InputRequiredResult)
                [request] = (first.input_requests or {}).values()
                assert isinstance(request, ElicitRequest)
                assert request.params.message == MESSAGE
                assert conn.asked.exchanges == []  # the raw call answered nobody

                conn.asked.script = [confirm]
                result = await conn.call("office_2026", "delete_file", {"name": "old-logo.png"})
                assert isinstance(result.content[0], TextContent)
                assert result.content[0].text == "Deleted old-logo.png."
                [asked] = conn.asked.exchanges
                assert (asked.server, asked.message, asked.action) == (
                    "office_2026",
                    MESSAGE,
                    "accept",
                )
                assert asked.scripted and "confirm" in asked.requested_schema["properties"]
            pool.close()
            tg.cancel_scope.cancel()

    anyio.run(main)


@pytest.mark.parametrize("scenario_id", sorted(ASKED))
def test_over_stdio_the_scripted_user_answers_the_round_trip_as_it_answers_a_request(
    scenario_id: str, tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    scenario = _scenario(tmp_path, scenario_id, "office_2026")
    result = _run(warm, scenario, tmp_path)
    assert result.outcome == "pass", result.detail
    assert [(e.server, e.action, e.scripted) for e in result.elicitations] == [
        ("office_2026", action, scripted) for action, scripted in ASKED[scenario_id]
    ]
    [asked] = result.elicitations
    assert asked.call == result.turn_results[asked.turn].first_call


def test_calling_again_after_a_declined_round_trip_is_a_forbidden_call(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    scenario = _scenario(tmp_path, "conv.office-delete-declined", "office_2026")
    delete = [item for item in ideal_script(scenario.turn_scenario(1)) if "call" in item]
    script = [*ideal_script(scenario.turn_scenario(0)), *delete, *delete, {"answer": "Done."}]
    result = _run(warm, scenario, tmp_path, script)
    assert result.outcome == "forbidden_call", result.detail
    assert "again after the user" in result.turn_results[1].detail
    assert [e.action for e in result.elicitations] == ["decline", "decline"]


def test_an_answer_that_does_not_fit_the_round_trips_schema_is_an_infra_error(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    scenario = _scenario(tmp_path, "conv.office-book-room-headcount", "office_2026")
    path = tmp_path / "asks.yaml"
    path.write_text(path.read_text().replace("content: {people: 3}", "content: {people: lots}"))
    scenario = load_suite(str(path)).scenarios[0]
    result = _run(warm, scenario, tmp_path)
    assert result.outcome == "infra_error"
    assert "does not fit the requested schema" in result.detail


@pytest.fixture(scope="module")
def office_url() -> Iterator[str]:
    """The office server over streamable HTTP, started by hand: the farm only connects."""
    with served_over_http(SERVER, "office") as (url, _proc):
        yield url


@pytest.mark.parametrize(
    "scenario_id", ["conv.office-delete-confirmed", "conv.office-delete-declined"]
)
def test_over_streamable_http_the_round_trip_is_answered_and_kept_on_the_trial(
    scenario_id: str, tmp_path: Path, office_url: str, warm: tuple[Runtime, Settings]
) -> None:
    servers = (
        f"servers:\n  - name: office_http\n    transport: http\n    url: {office_url}\n"
        '    protocol: "2026-07-28"\n    reset: {tool: reset_office}\n'
    )
    scenario = _scenario(tmp_path, scenario_id, "office_http", servers)
    result = _run(warm, scenario, tmp_path)
    assert result.outcome == "pass", result.detail
    assert [(e.server, e.action, e.scripted) for e in result.elicitations] == [
        ("office_http", action, scripted) for action, scripted in ASKED[scenario_id]
    ]


@pytest.mark.parametrize(
    ("definition", "named"),
    [
        ({"replay": "office.yaml"}, "served over the `legacy` handshake"),
        (
            {"transport": "http", "url": "http://127.0.0.1:1/mcp", "reset": "session"},
            "`reset: session` over http needs the `legacy` protocol",
        ),
        ({"command": ["x"], "protocol": "2025-11-25"}, "protocol"),
    ],
)
def test_a_protocol_the_farm_cannot_open_that_way_is_a_load_error(
    definition: dict[str, Any], named: str
) -> None:
    with pytest.raises(ValidationError, match=named):
        ServerDef.model_validate({"name": "x", "protocol": "2026-07-28", **definition})
