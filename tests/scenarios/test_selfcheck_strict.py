"""Self-checks under `calls: strict`, through the real servers.

Every bundled scenario that counts calls leniently is run as a sweep with `calls: strict`
would run it: its ideal agent passes on the first try, and the mistakes strict counting
refuses (a second call that also fits a step done, an exact repeat of a step that is not the
last) get the outcomes it gives them; either repeat passes where it changes nothing (a tool
its server marks `readOnlyHint: true`, an `idempotent` step). A scenario whose task needs the same call twice is run
through the whole self-check: its ideal agent passes under strict counting.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import (
    Scenario,
    Settings,
    TrialResult,
)
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import (
    ideal_call_problems,
    ideal_script,
    trial,
)
from tests.scenarios.mistakes_strict import deserved, strict_counting_mistakes
from tests.scenarios.test_selfcheck import (
    SUITES,
    ideals,
    mistakes,
)

pytestmark = pytest.mark.integration


def _strict(scenario: Scenario) -> Scenario:
    return scenario.model_copy(update={"calls": "strict"})


def strict_cases(scenario: Scenario) -> list[tuple[str, list[dict[str, Any]], str]]:
    """The ideal agent on each route, and each route's strict-counting mistakes (a mistake
    that is another route done right passes)."""
    ways = _strict(scenario).ways()
    done = [ideal_script(way) for _route, way in ways]
    found = ideals(_strict(scenario))
    for route, way in ways:
        at = "" if route is None else f"@{route}"
        for name, script, outcome in strict_counting_mistakes(way):
            found.append((f"{name}{at}", script, "pass" if script in done else outcome))
    return found


CASES = [
    pytest.param(suite, scenario, name, script, outcome, id=f"{scenario.id}:{name}")
    for suite in SUITES
    for scenario in load_suite(suite).scenarios
    if scenario.calls == "lenient" and not scenario.user_sim
    for name, script, outcome in strict_cases(scenario)
]


def _run(
    runtime: Runtime, settings: Settings, suite: str, scenario: Scenario, script: Any
) -> TrialResult:
    spec = trial(scenario, script, suite=suite).model_copy(update={"calls": "strict"})
    return runtime.run(spec, settings)


@pytest.mark.parametrize(("suite", "scenario", "name", "script", "outcome"), CASES)
def test_under_strict_counting_a_scripted_agent_gets_the_outcome_it_deserves(
    suite: str,
    scenario: Scenario,
    name: str,
    script: list[dict[str, Any]],
    outcome: str,
    warm: tuple[Runtime, Settings],
) -> None:
    runtime, settings = warm
    result = _run(runtime, settings, suite, scenario, script)
    outcome = deserved(runtime, suite, scenario, name, script, outcome, result)
    assert result.outcome == outcome, f"{name}: {result.outcome} ({result.detail})"
    if name.startswith("does-the-last-step-again") and outcome != "pass":
        # A second call that fits the step and works is refused for being a second call (one
        # that the server refuses, a move made twice, say, is refused for failing).
        assert "again, done by call" in result.detail or not result.tool_calls[-1].ok
    if name.startswith("ideal"):
        assert result.first_try is True
        assert ideal_call_problems(scenario, result) == []


# Look, move, look again: the same call twice, each doing a step of its own.
LOOK_AGAIN = {
    "suite": "look-again",
    "scenarios": [
        {
            "id": "strict.look-move-look",
            "version": 1,
            "tier": "moderate",
            "prompt": "What's on my Desktop? Put the meeting notes in Documents, then show me "
            "the Desktop again.",
            "servers": ["filesystem"],
            "calls": "strict",
            "expect": [
                {
                    "tool": "list_directory",
                    "params": {"path": {"path": "Desktop"}},
                    "example": {"path": "/Desktop"},
                },
                {
                    "tool": "move_file",
                    "params": {
                        "source": {"path": "Desktop/meeting-notes.md"},
                        "destination": {"regex": "/?Documents(/meeting-notes\\.md)?/?"},
                    },
                    "example": {
                        "source": "/Desktop/meeting-notes.md",
                        "destination": "/Documents/meeting-notes.md",
                    },
                },
                {
                    "tool": "list_directory",
                    "params": {"path": {"path": "Desktop"}},
                    "example": {"path": "/Desktop"},
                },
            ],
            "final_answer": "todo",
            "example_answer": "The notes are in Documents; the Desktop now has todo.txt, "
            "ideas.md and wallpaper-credits.txt.",
        }
    ],
}


@pytest.fixture(scope="module")
def look_again(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Scenario]:
    path = tmp_path_factory.mktemp("suite") / "look-again.yaml"
    path.write_text(yaml.safe_dump(LOOK_AGAIN), encoding="utf-8")
    return str(path), load_suite(str(path)).scenarios[0]


def test_a_task_that_needs_the_same_call_twice_passes_the_whole_self_check_under_strict(
    look_again: tuple[str, Scenario], warm: tuple[Runtime, Settings]
) -> None:
    suite, scenario = look_again
    runtime, settings = warm
    wrong = {}
    for name, script, expected in [*ideals(scenario), *mistakes(scenario)]:
        result = runtime.run(trial(scenario, script, suite=suite), settings)
        outcome = deserved(runtime, suite, scenario, name, script, expected, result)
        if result.outcome != outcome:
            wrong[name] = (outcome, result.outcome, result.detail)
        if name == "ideal":
            assert result.first_try is True
            assert [c.tool for c in result.tool_calls] == [
                "list_directory",
                "move_file",
                "list_directory",
            ]
            assert ideal_call_problems(scenario, result) == []
    assert wrong == {}
