"""An agent command as the system under test: the scripted agent process, making a scenario's
ideal calls through the farm's recording proxy, passes as the farm's own scripted ideal does,
with the same recorded calls; a hung agent is killed at its limit; a missing command is the
command's fault (`infra_error`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import ModelTarget, Scenario, Settings, TrialResult
from mcp_farm.schema.specs import DISTRACTOR_SERVER, ToolListLevel
from mcp_farm.workers.trial import execute_trial
from tests.helpers import ideal_script, trial

BASIC = load_suite("basic").scenarios
PROOF = [
    (suite, scenario)
    for suite in ("basic", "conversations", "state")
    for scenario in load_suite(suite).scenarios
]


def _agent_run(
    scenario: Scenario,
    script: list[dict[str, Any]],
    settings: Settings,
    tmp_path: Path,
    suite: str = "basic",
    **agent: Any,
) -> TrialResult:
    path = tmp_path / f"{scenario.id}.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    agent.setdefault(
        "command",
        ["{python}", "-m", "mcp_farm.scenarios.agents.scripted", "--config", "{mcp_config}"],
    )
    agent.setdefault("env", {"FARM_AGENT_SCRIPT": str(path)})
    target = ModelTarget.model_validate(
        {"id": "scripted-agent", "adapter": "agent", "model": "scripted", "agent": agent}
    )
    spec = trial(scenario, script, suite=suite).model_copy(update={"model": target})
    return anyio.run(execute_trial, spec, settings)


def _calls(result: TrialResult) -> list[tuple[str | None, str, dict[str, Any], bool, str]]:
    return [(c.server, c.tool, c.arguments, c.ok, c.result_digest) for c in result.tool_calls]


@pytest.mark.parametrize(("suite", "scenario"), PROOF, ids=lambda s: getattr(s, "id", s))
def test_the_scripted_agent_process_passes_as_the_farms_scripted_ideal_does(
    suite: str, scenario: Scenario, settings: Settings, tmp_path: Path
) -> None:
    script = ideal_script(scenario)
    farm = anyio.run(execute_trial, trial(scenario, script, suite=suite), settings)
    agent = _agent_run(scenario, script, settings, tmp_path, suite=suite)
    assert (agent.outcome, agent.detail) == (farm.outcome, farm.detail)
    assert agent.outcome == "pass"
    assert _calls(agent) == _calls(farm)
    assert agent.final_answer == farm.final_answer


def test_the_jsonl_convention_runs_one_process_for_the_conversation(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = BASIC[0]
    script = ideal_script(scenario)
    command = ["{python}", "-m", "mcp_farm.scenarios.agents.scripted", "--convention", "jsonl"]
    result = _agent_run(scenario, script, settings, tmp_path, command=command, convention="jsonl")
    assert result.outcome == "pass", result.detail


def test_a_hung_agent_is_killed_at_its_limit_and_times_out(
    settings: Settings, tmp_path: Path
) -> None:
    hang = ["{python}", "-c", "import time\nwhile True: time.sleep(1)"]
    result = _agent_run(BASIC[0], [], settings, tmp_path, command=hang, time_limit_s=1)
    assert result.outcome == "timeout"
    assert "killed" in result.detail


def test_a_missing_command_is_an_infrastructure_error(settings: Settings, tmp_path: Path) -> None:
    result = _agent_run(BASIC[0], [], settings, tmp_path, command=["/no/such/agent-command"])
    assert result.outcome == "infra_error"
    assert "/no/such/agent-command" in result.detail


def test_an_agent_that_never_calls_a_tool_is_graded_no_tool_call(
    settings: Settings, tmp_path: Path
) -> None:
    silent = ["{python}", "-c", "import sys; sys.stdin.read(); print('I cannot help.')"]
    result = _agent_run(BASIC[0], [], settings, tmp_path, command=silent)
    assert result.outcome == "no_tool_call"
    assert result.final_answer == "I cannot help."


def test_an_agent_that_crashes_is_a_format_error_with_its_stderr(
    settings: Settings, tmp_path: Path
) -> None:
    crash = ["{python}", "-c", "import sys; sys.stderr.write('boom\\x1b[0m'); sys.exit(3)"]
    result = _agent_run(BASIC[0], [], settings, tmp_path, command=crash)
    assert result.outcome == "format_error"
    assert "status 3" in result.detail and "boom\\x1b[0m" in result.detail


def test_garbage_on_a_jsonl_agents_stdout_is_a_format_error(
    settings: Settings, tmp_path: Path
) -> None:
    garbage = ["{python}", "-c", "import sys; sys.stdin.readline(); print('hello', flush=True)"]
    result = _agent_run(BASIC[0], [], settings, tmp_path, command=garbage, convention="jsonl")
    assert result.outcome == "format_error"
    assert "hello" in result.detail


def test_an_agent_runs_with_the_config_file_named_in_its_environment(
    settings: Settings, tmp_path: Path
) -> None:
    show = [
        "{python}",
        "-c",
        "import os, sys; sys.stdin.read(); print(open(os.environ['FARM_MCP_CONFIG']).read())",
    ]
    result = _agent_run(BASIC[0], [], settings, tmp_path, command=show)
    config = json.loads(result.final_answer or "")
    assert set(config["mcpServers"]) == set(BASIC[0].servers)
    assert all(s["url"].startswith("http://127.0.0.1:") for s in config["mcpServers"].values())


def test_a_jsonl_agent_takes_a_conversations_follow_ups_on_one_process(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = next(s for s in load_suite("conversations").scenarios if len(s.turns) >= 2)
    script = ideal_script(scenario)
    command = ["{python}", "-m", "mcp_farm.scenarios.agents.scripted", "--convention", "jsonl"]
    farm = anyio.run(execute_trial, trial(scenario, script, suite="conversations"), settings)
    result = _agent_run(
        scenario, script, settings, tmp_path, "conversations", command=command, convention="jsonl"
    )
    assert (result.outcome, len(result.turn_results)) == ("pass", len(scenario.turns))
    assert _calls(result) == _calls(farm)


def test_an_agent_trial_says_its_tokens_and_model_time_were_not_measured(
    settings: Settings, tmp_path: Path
) -> None:
    script = ideal_script(BASIC[0])
    result = _agent_run(BASIC[0], script, settings, tmp_path)
    assert result.provenance.model_pins["tokens"] == "not measured"
    assert (result.tokens, result.model_s, result.first_token_s) == (None, None, None)


LISTER = """
import json, sys, anyio
from mcp_farm.scenarios.agents._client import config_path, sessions, tool_owners
async def main():
    sys.stdin.read()
    async with sessions(config_path(None)) as opened:
        owners = await tool_owners(opened)
        print(json.dumps({name: server for name, (server, _) in owners.items()}))
anyio.run(main)
"""


def test_the_proxy_lists_a_tool_list_levels_distractors_under_a_neutral_name(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = BASIC[0]
    level = ToolListLevel.at(10, "as_is", "as_is")
    spec = trial(scenario, []).model_copy(
        update={
            "tool_list": level,
            "model": ModelTarget.model_validate(
                {
                    "id": "lister",
                    "adapter": "agent",
                    "model": "lister",
                    "agent": {"command": ["{python}", "-c", LISTER]},
                }
            ),
        }
    )
    result = anyio.run(execute_trial, spec, settings)
    listed: dict[str, str] = json.loads(result.final_answer or "")
    assert set(scenario.expected_tools) <= set(listed)
    assert sum(1 for server in listed.values() if server == "tools") == 10
    assert DISTRACTOR_SERVER not in set(listed.values())


def test_a_hung_agents_whole_process_group_is_gone_after_its_limit(
    settings: Settings, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    hang = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "time.sleep(600)\n"
    )
    result = _agent_run(
        BASIC[0], [], settings, tmp_path, command=["{python}", "-c", hang], time_limit_s=2
    )
    assert result.outcome == "timeout", result.detail
    for pid in map(int, pids.read_text().split()):
        assert not _alive(pid), pid


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, killed and not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_an_agent_that_starts_its_servers_as_commands_reaches_them_through_the_bridge(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = BASIC[0]
    script = ideal_script(scenario)
    farm = anyio.run(execute_trial, trial(scenario, script), settings)
    result = _agent_run(scenario, script, settings, tmp_path, servers_as="stdio")
    assert result.outcome == "pass", result.detail
    assert _calls(result) == _calls(farm)


@pytest.mark.parametrize("convention", ["oneshot", "jsonl"])
def test_an_agent_repeating_a_call_ends_as_a_tool_loop_as_a_model_would(
    convention: str, settings: Settings, tmp_path: Path
) -> None:
    scenario = BASIC[0]
    call = ideal_script(scenario)[0]
    script = [call] * 8 + [{"answer": "done"}]
    farm = anyio.run(execute_trial, trial(scenario, script), settings)
    command = ["{python}", "-m", "mcp_farm.scenarios.agents.scripted", "--convention", convention]
    result = _agent_run(
        scenario, script, settings, tmp_path, command=command, convention=convention
    )
    assert (result.outcome, result.stop_reason) == (farm.outcome, farm.stop_reason)
    assert result.outcome == "tool_loop"
    assert _calls(result) == _calls(farm)


def test_a_scenario_with_a_simulated_user_is_an_infra_error_naming_why(
    settings: Settings, tmp_path: Path
) -> None:
    scenario = next(s for s in load_suite("usersim").scenarios)
    spec = trial(scenario, [], suite="usersim").model_copy(
        update={
            "user_arm": "no_user",
            "model": ModelTarget.model_validate(
                {"id": "a", "adapter": "agent", "model": "a", "agent": {"command": ["true"]}}
            ),
        }
    )
    result = anyio.run(execute_trial, spec, settings)
    assert result.outcome == "infra_error"
    assert "simulated" in result.detail
