"""Conversations on the real reference servers installed in .tools/: every ideal agent passes
every turn in every prompt mode, and the scripted mistake of each conversation's form (a
guess instead of a question, a forbidden call, giving up after an error, a value not taken
from the earlier turn) gets the outcome it deserves."""

from __future__ import annotations

import os
from typing import Any

import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import Scenario, Settings, TrialResult
from mcp_farm.workers.mcp.pool import REPO_ROOT
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import ideal_call_problems, ideal_script, trial

pytestmark = pytest.mark.integration

NAME = "conversations-thirdparty"
SUITE = load_suite(NAME)
BY_ID = {s.id: s for s in SUITE.scenarios}
MODES = ["native", "json", "grammar"]
INSTALLED = [
    ".tools/node/node_modules/.bin/mcp-server-filesystem",
    ".tools/node/node_modules/.bin/mcp-server-memory",
    ".tools/py/bin/mcp-server-time",
    ".tools/py/bin/mcp-server-git",
]


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


def _turn(scenario: Scenario, i: int) -> list[dict[str, Any]]:
    return ideal_script(scenario.turn_scenario(i))


def _run(warm: tuple[Runtime, Settings], scenario: Scenario, script: Any, **kw: Any) -> TrialResult:
    runtime, settings = warm
    return runtime.run(trial(scenario, script, suite=NAME, **kw), settings)


def test_the_suite_holds_five_third_party_conversations_of_every_form() -> None:
    scenarios = SUITE.scenarios
    assert len(scenarios) >= 5
    assert all("third-party" in s.tags and len(s.turns) >= 2 for s in scenarios)
    assert {n for s in scenarios for n in s.servers} == {
        "ref-filesystem",
        "ref-memory",
        "ref-time",
        "ref-git",
    }
    assert any(t.must_ask for s in scenarios for t in s.turns)
    assert any(s.never for s in scenarios)
    assert any(st.expect_error for s in scenarios for t in s.turns for st in t.expect)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", SUITE.scenarios, ids=lambda s: s.id)
def test_an_ideal_agent_passes_every_turn_through_the_reference_servers(
    scenario: Scenario, mode: str, warm: tuple[Runtime, Settings]
) -> None:
    result = _run(warm, scenario, ideal_script(scenario), prompt=mode)
    assert result.outcome == "pass", (result.detail, [c.error for c in result.tool_calls])
    assert [t.outcome for t in result.turn_results] == ["pass"] * len(scenario.turns)
    assert ideal_call_problems(scenario, result) == []


ASKING = [(s, i) for s in SUITE.scenarios for i, t in enumerate(s.turns) if t.must_ask]


@pytest.mark.parametrize(("scenario", "i"), ASKING, ids=lambda v: getattr(v, "id", str(v)))
def test_doing_the_next_turns_calls_instead_of_asking_is_guessed(
    scenario: Scenario, i: int, warm: tuple[Runtime, Settings]
) -> None:
    script: list[dict[str, Any]] = []
    for k in range(len(scenario.turns)):
        guess = [item for item in _turn(scenario, k + 1) if "call" in item] if k == i else []
        script += [*guess, {"answer": "Done."}] if k == i else _turn(scenario, k)
    result = _run(warm, scenario, script)
    assert result.outcome == "guessed", result.detail
    assert result.turn_results[i].outcome == "guessed"


def test_checking_out_the_branch_the_user_only_wanted_to_see_is_a_forbidden_call(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = BY_ID["conv-ref.git-look-dont-switch"]
    checkout = {
        "call": {
            "name": "git_checkout",
            "arguments": {"repo_path": "webapp", "branch_name": "feature/dark-mode"},
        }
    }
    result = _run(warm, scenario, [*_turn(scenario, 0), checkout, *_turn(scenario, 1)])
    assert result.outcome == "forbidden_call", result.detail
    assert result.turn_results[1].outcome == "forbidden_call"
    assert "`never` forbids" in result.turn_results[1].detail


RECOVERY = [s for s in SUITE.scenarios if "recovery" in s.tags]


@pytest.mark.parametrize("scenario", RECOVERY, ids=lambda s: s.id)
def test_recovering_after_the_error_passes_and_giving_up_fails_the_turn(
    scenario: Scenario, warm: tuple[Runtime, Settings]
) -> None:
    fixed = _run(warm, scenario, ideal_script(scenario))
    assert (fixed.outcome, fixed.recovered) == ("pass", True), fixed.detail
    failing = _turn(scenario, 0)[0]
    gave_up = _run(warm, scenario, [failing, {"answer": "That file does not exist, sorry."}])
    assert gave_up.turn_results[0].outcome in ("wrong_sequence", "wrong_params"), gave_up.detail
    assert gave_up.recovered is False


def test_a_name_the_memory_was_never_given_fails_the_chained_turn(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = BY_ID["conv-ref.memory-dentist-moved"]
    other = {
        "call": {
            "name": "add_observations",
            "arguments": {
                "observations": [{"entityName": "Dentist", "contents": ["on Harbour Street"]}]
            },
        }
    }
    result = _run(warm, scenario, [*_turn(scenario, 0), other, {"answer": "Harbour Street."}])
    assert [t.outcome for t in result.turn_results] == ["pass", "wrong_params"], result.detail
