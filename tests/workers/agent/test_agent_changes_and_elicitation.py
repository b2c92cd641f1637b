"""What a server starts mid-session reaches an agent through the proxy: a tool-list change is
listed again and announced to the agent (`notifications/tools/list_changed`), and, where the
target says `elicitation: agent`, a server's elicitation goes to the agent and its answer back
to the server, recorded as the farm records its scripted user's. The scripted agent process
passes those scenarios with the farm's scripted ideal's outcome, calls and elicitations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.scenarios.agents.scripted import HEARD
from mcp_farm.schema import ModelTarget, Scenario, Settings, TrialResult
from mcp_farm.workers.trial import execute_trial
from tests.helpers import ideal_script, trial

CONVERSATIONS = load_suite("conversations").scenarios
CHANGES = [s for s in CONVERSATIONS if "tools-changed" in s.tags][:2]
ASKING = [s for s in CONVERSATIONS if "elicitation" in s.tags]
SCRIPTED = ["{python}", "-m", "mcp_farm.scenarios.agents.scripted"]


def _with_elicit(scenario: Scenario, script: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ideal script with, at the start of each turn, the `elicit` entries that answer
    there: the turn's own, then the scenario's (the farm's order)."""
    turns = scenario.dialogue()
    out: list[dict[str, Any]] = []
    turn = 0
    for item in script:
        if not out or "answer" in out[-1]:
            entries = [*turns[turn].elicit, *scenario.elicit] if turn < len(turns) else []
            out.append({"elicit": [e.model_dump(mode="json", exclude_none=True) for e in entries]})
            turn += 1
        out.append(item)
    return out


def _agent_run(
    scenario: Scenario,
    script: list[dict[str, Any]],
    settings: Settings,
    folder: Path,
    convention: str = "jsonl",
    **agent: Any,
) -> TrialResult:
    path = folder / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    command = [*SCRIPTED, "--convention", convention]
    spec = {"command": command, "convention": convention, "cwd": str(folder), **agent}
    spec["env"] = {"FARM_AGENT_SCRIPT": str(path)}
    target = ModelTarget.model_validate(
        {"id": "scripted-agent", "adapter": "agent", "model": "scripted", "agent": spec}
    )
    run = trial(scenario, script, suite="conversations").model_copy(update={"model": target})
    return anyio.run(execute_trial, run, settings)


def _calls(result: TrialResult) -> list[tuple[str | None, str, dict[str, Any], bool, str]]:
    return [(c.server, c.tool, c.arguments, c.ok, c.result_digest) for c in result.tool_calls]


def _asked(result: TrialResult) -> list[tuple[Any, ...]]:
    return [(e.turn, e.call, e.server, e.message, e.action, e.content) for e in result.elicitations]


@pytest.mark.parametrize("scenario", CHANGES, ids=lambda s: s.id)
def test_a_jsonl_agent_is_told_of_a_tool_list_change_and_calls_as_the_farms_ideal(
    scenario: Scenario, settings: Settings, tmp_path: Path
) -> None:
    script = ideal_script(scenario)
    farm = anyio.run(execute_trial, trial(scenario, script, suite="conversations"), settings)
    result = _agent_run(scenario, script, settings, tmp_path)
    assert (result.outcome, result.detail) == (farm.outcome, farm.detail)
    assert result.outcome == "pass"
    assert _calls(result) == _calls(farm)
    # The agent lists again only when told: it heard the change.
    assert "notifications/tools/list_changed" in (tmp_path / HEARD).read_text()


@pytest.mark.parametrize("convention", ["jsonl", "oneshot"])
@pytest.mark.parametrize("scenario", ASKING, ids=lambda s: s.id)
def test_an_agent_that_handles_elicitation_answers_as_the_farms_script_would(
    scenario: Scenario, convention: str, settings: Settings, tmp_path: Path
) -> None:
    script = ideal_script(scenario)
    farm = anyio.run(execute_trial, trial(scenario, script, suite="conversations"), settings)
    result = _agent_run(
        scenario,
        _with_elicit(scenario, script),
        settings,
        tmp_path,
        convention,
        elicitation="agent",
    )
    assert (result.outcome, result.detail) == (farm.outcome, farm.detail)
    assert _calls(result) == _calls(farm)
    assert _asked(result) == _asked(farm)
    assert result.elicitations and all(e.scripted for e in result.elicitations)


def test_the_agents_answer_reaches_the_server_not_the_scenarios_script(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = next(s for s in ASKING if s.id == "conv.office-delete-declined")
    script = ideal_script(scenario)
    accept = {"field": "confirm", "action": "accept", "content": {"confirm": True}}
    items = [{"elicit": [accept]} if "elicit" in i else i for i in _with_elicit(scenario, script)]
    result = _agent_run(scenario, items, settings, tmp_path, elicitation="agent")
    asked = [(e.action, e.content) for e in result.elicitations]
    assert asked == [("accept", {"confirm": True})]  # the scenario's script would decline
    deleted = [c for c in result.tool_calls if c.tool == "delete_file"]
    assert deleted and deleted[0].ok and "budget" in deleted[0].result_text.lower()


def test_by_default_the_scenarios_script_answers_and_the_agent_is_not_asked(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = next(s for s in ASKING if s.id == "conv.office-delete-declined")
    script = ideal_script(scenario)
    accept = {"field": "confirm", "action": "accept", "content": {"confirm": True}}
    items = [{"elicit": [accept]}, *script]
    result = _agent_run(scenario, items, settings, tmp_path)
    assert [e.action for e in result.elicitations] == ["decline"]


def test_an_agent_targets_elicitation_is_left_out_of_its_json_at_the_default() -> None:
    def target(**agent: Any) -> ModelTarget:
        spec = {"command": ["a"], **agent}
        return ModelTarget.model_validate(
            {"id": "a", "adapter": "agent", "model": "a", "agent": spec}
        )

    assert "elicitation" not in target().model_dump_json()
    assert target().key() == target(elicitation="script").key()
    assert '"elicitation":"agent"' in target(elicitation="agent").model_dump_json()
    with pytest.raises(ValueError, match="elicitation"):
        target(elicitation="user")


def test_an_agent_that_starts_its_servers_as_commands_is_asked_through_the_bridge(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = next(s for s in ASKING if s.id == "conv.office-book-room-headcount")
    script = ideal_script(scenario)
    farm = anyio.run(execute_trial, trial(scenario, script, suite="conversations"), settings)
    items = _with_elicit(scenario, script)
    result = _agent_run(
        scenario, items, settings, tmp_path, elicitation="agent", servers_as="stdio"
    )
    assert (result.outcome, _calls(result), _asked(result)) == (
        farm.outcome,
        _calls(farm),
        _asked(farm),
    )


MUTE = """
import sys, anyio
from mcp_farm.scenarios.agents._client import config_path, sessions
async def main():
    sys.stdin.read()
    async with sessions(config_path(None)) as opened:
        args = {"room": "Attic", "date": "2026-03-12"}
        result = await opened["office"].call_tool("book_room", args)
        print(result.content[0].text)
anyio.run(main)
"""


def test_an_agent_that_cannot_answer_an_elicitation_is_taken_to_decline(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = next(s for s in ASKING if s.id == "conv.office-book-room-headcount")
    result = _agent_run(
        scenario,
        [],
        settings,
        tmp_path,
        "oneshot",
        elicitation="agent",
        command=["{python}", "-c", MUTE],
    )
    assert [(e.action, e.scripted) for e in result.elicitations] == [("decline", False)]
    assert result.tool_calls[0].tool == "book_room"


MODERN = """
import json, sys, anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged, listen
from mcp_farm.scenarios.agents._client import config_path, servers_of
async def main():
    url = servers_of(config_path(None))["workspace"]["url"]
    heard = anyio.Event()
    async with streamable_http_client(url) as (r, w), ClientSession(r, w) as s:
        await s.discover()
        async with listen(s, tools_list_changed=True) as sub, anyio.create_task_group() as tg:
            async def hear():
                async for event in sub:
                    if isinstance(event, ToolsListChanged):
                        heard.set()
            tg.start_soon(hear)
            for turn, _line in enumerate(sys.stdin):
                if turn:
                    with anyio.move_on_after(10):
                        await heard.wait()
                tools = sorted(t.name for t in (await s.list_tools()).tools)
                text = (await s.call_tool("list_tasks", {})).content[0].text
                said = {"protocol": s.protocol_version, "heard": heard.is_set(), "tools": tools}
                answer = json.dumps(said) + "\\n" + text
                sys.stdout.write(json.dumps({"assistant": answer}) + "\\n")
                sys.stdout.flush()
            tg.cancel_scope.cancel()
anyio.run(main)
"""


def test_an_agent_at_protocol_2026_07_28_hears_a_change_on_its_listen_stream(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = next(s for s in CHANGES if s.id == "conv.workspace-archive-after-upgrade")
    command = ["{python}", "-c", MODERN]
    result = _agent_run(scenario, [], settings, tmp_path, command=command)
    said = [json.loads(t.answer.split("\n", 1)[0]) for t in result.turn_results]
    assert [s["heard"] for s in said] == [False, True]
    assert said[0]["protocol"] == "2026-07-28"
    assert "archive_task" not in said[0]["tools"] and "archive_task" in said[1]["tools"]
