"""Self-checks of every bundled suite (or of your own: FARM_SELFCHECK_SUITES), through the
real servers (third-party ones included).

For each scenario, an ideal scripted agent (its expected calls with their `example` arguments,
then its `example_answer`) must pass, and a scripted agent making one known mistake must get
exactly the outcome that mistake deserves. A scenario whose matchers are too loose (a mistake
passes) or wrong (the ideal agent fails) shows up here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from mcp_farm.scenarios import load_suite
from mcp_farm.scenarios.validate import suite_files
from mcp_farm.schema import (
    Scenario,
    Settings,
    TrialResult,
)
from mcp_farm.workers.node.runtime import Runtime
from mcp_farm.workers.trial import execute_trial
from tests.helpers import (
    ideal_call_problems,
    ideal_script,
    trial,
)
from tests.scenarios.leaks import leak_problem
from tests.scenarios.mistakes import (
    alternate_calls,
    alternate_mistakes,
    form_mistakes,
    route_mistakes,
)
from tests.scenarios.mistakes_match import match_mistakes, outcome_by_schema
from tests.scenarios.mistakes_strict import deserved

pytestmark = pytest.mark.integration

OWN_SUITES = "FARM_SELFCHECK_SUITES"
"""Suite files (or folders of them) to self-check instead of the bundled suites, separated
like PATH: `FARM_SELFCHECK_SUITES=my/suite.yaml pytest tests/scenarios/test_selfcheck.py`
(docs/adding-a-server.md, where it checks that scenarios are gradeable)."""


def _suites() -> list[str]:
    own = [Path(p) for p in os.environ.get(OWN_SUITES, "").split(os.pathsep) if p]
    if own:
        return [str(path.resolve()) for path in suite_files(own)]
    return [path.stem for path in suite_files([])]


SUITES = _suites()
BUNDLED = not os.environ.get(OWN_SUITES)
THIRD_PARTY = {"thirdparty", "conversations-thirdparty"}
"""The bundled suites on third-party servers (installed by `bash scripts/setup.sh --dev`)."""
INVENTED = {"call": {"name": "open_portal", "arguments": {}}}
WRONG_ANSWER = {"answer": "Sorry, I could not find that."}


def mistakes(
    scenario: Scenario, route: str | None = None
) -> list[tuple[str, list[dict[str, Any]], str]]:
    """(name, script, outcome it must get) for each mistake that applies to the scenario; on a
    scenario with routes, each route's own mistakes (`route` names the one judged), a wrong
    route, and the listed alternatives on their routes. A conversation's mistakes are those of
    tests/scenarios/test_conversations.py (guessing instead of asking),
    tests/scenarios/test_never_and_recovery.py (a forbidden call, giving up after an error) and,
    for tool lists that change, tests/scenarios/test_tool_changes.py."""
    if scenario.turns or scenario.user_sim:
        return []
    if scenario.routes:
        # A mistake on one route may be another route done right (a look-up left out where
        # a route without it exists): that one passes.
        done = [ideal_script(way) for _route, way in scenario.ways()]
        return [
            (f"{name}@{route}", script, "pass" if script in done else outcome)
            for route, way in scenario.ways()
            for name, script, outcome in mistakes(way, route)
        ] + [*route_mistakes(scenario), *alternate_mistakes(scenario)]
    ideal = ideal_script(scenario)
    calls, answer = ideal[:-1], ideal[-1]
    if not scenario.expect:
        return [("calls-a-tool-when-none-is-needed", [INVENTED, answer], "wrong_tool")]
    found = [
        ("answers-without-a-tool", [answer], "no_tool_call"),
        ("invents-a-tool", [INVENTED, *calls, answer], "wrong_tool"),
        (
            "repeats-the-last-call",
            [*calls, *[calls[-1]] * scenario.max_repeats, answer],
            "tool_loop",
        ),
    ]
    tools = scenario.expected_tools
    if tools.count(tools[0]) == 1:
        first = calls[0]["call"]
        extra = {"call": {"name": first["name"], "arguments": first["arguments"] | {"zz": 1}}}
        # A step that expects an error is done by a call that fails, one that breaks the
        # tool's input schema included: the extra argument is not held against it.
        added = "pass" if scenario.expect[0].expect_error else "wrong_params"
        found.append(("adds-an-argument", [extra, *calls[1:], answer], added))
        if len(calls) > 1:
            found.append(("skips-the-first-step", [*calls[1:], answer], "wrong_sequence"))
    if "doubled" in scenario.tags:
        # The write made twice: lenient counting lets the repeat through, the state probe
        # sees the effect twice (docs/state.md).
        found.append(("doubles-the-write", [calls[0], *calls, answer], "wrong_state"))
    if scenario.final_answer and not _matches(scenario.final_answer, WRONG_ANSWER["answer"]):
        found.append(("gives-a-wrong-answer", [*calls, WRONG_ANSWER], "output_mismatch"))
    alternates = [] if route is not None else list(alternate_mistakes(scenario))
    return found + form_mistakes(scenario) + match_mistakes(scenario) + alternates


def _matches(pattern: str, text: str) -> bool:
    return re.search(pattern, text, re.IGNORECASE) is not None


def ideals(scenario: Scenario) -> list[tuple[str, list[dict[str, Any]], str]]:
    """The ideal agent, on each route of a scenario with routes (`ideal@route`). A simulated
    user's conversation needs the user's script too: tests/workers/usersim checks those."""
    if scenario.user_sim:
        return []
    return [
        ("ideal" if route is None else f"ideal@{route}", ideal_script(way), "pass")
        for route, way in scenario.ways()
    ]


CASES = [
    pytest.param(suite, scenario, name, script, outcome, id=f"{scenario.id}:{name}")
    for suite in SUITES
    for scenario in load_suite(suite).scenarios
    for name, script, outcome in [*ideals(scenario), *mistakes(scenario)]
]


@pytest.fixture(autouse=True, scope="module")
def _third_party_installed() -> None:
    if THIRD_PARTY & set(SUITES) and not os.path.exists(".tools/py/installed"):
        message = "third-party servers missing: run `bash scripts/setup.sh --dev`"
        if os.environ.get("CI") == "true":
            pytest.fail(message)


@pytest.mark.skipif(not BUNDLED, reason="checks the bundled suites only")
def test_the_bundled_suites_are_the_size_and_shape_promised() -> None:
    first_party = [
        s for suite in SUITES if suite not in THIRD_PARTY for s in load_suite(suite).scenarios
    ]
    tiers = [s.tier for s in first_party]
    assert len(first_party) >= 60
    assert tiers.count("simple") >= 15
    assert tiers.count("moderate") >= 20
    assert tiers.count("complex") >= 25
    assert all(
        s.wordings > 1 for suite in SUITES for s in load_suite(suite).scenarios if not s.user_sim
    )
    assert len(load_suite("thirdparty").scenarios) >= 8
    assert sum(1 for s in first_party if not (s.expect or s.routes or s.turns)) >= 2
    assert SEEDED, "no bundled scenario has setup: the leak probe would check nothing"


def test_every_alternative_with_params_of_its_own_is_called_by_some_self_check() -> None:
    # The ideal agent calls each step's first tool only: an alternative judged by its own
    # params is shown to work only if a self-check calls it (its `example`, or a listed call).
    called = {
        (s.id, route, j, tool)
        for suite in SUITES
        for s in load_suite(suite).scenarios
        for route, j, tool, _a in alternate_calls(s)
    }
    uncalled = [
        (s.id, route, j, tool)
        for suite in SUITES
        for s in load_suite(suite).scenarios
        for route, way in s.ways()
        for j, step in enumerate(way.expect)
        for tool in step.names[1:]
        if not isinstance(step.tool, str)
        and step.tool.own_params(tool) is not None
        and (s.id, route, j, tool) not in called
    ]
    assert uncalled == []


@pytest.mark.parametrize(("suite", "scenario", "name", "script", "outcome"), CASES)
def test_a_scripted_agent_gets_the_outcome_its_behaviour_deserves(
    suite: str,
    scenario: Scenario,
    name: str,
    script: list[dict[str, Any]],
    outcome: str,
    warm: tuple[Runtime, Settings],
) -> None:
    runtime, settings = warm
    outcome = outcome_by_schema(outcome, suite, scenario, settings)
    result = runtime.run(trial(scenario, script, suite=suite), settings)
    # Under `calls: strict`, a repeat that changes nothing (a read-only tool) passes.
    outcome = deserved(runtime, suite, scenario, name, script, outcome, result)
    assert result.outcome == outcome, f"{name}: {result.outcome} ({result.detail})"
    if name.startswith("ideal"):
        assert ideal_call_problems(scenario, result) == []
        assert result.route == (name.partition("@")[2] or None)


SEEDED = [
    pytest.param(suite, scenario, id=scenario.id)
    for suite in SUITES
    for scenario in load_suite(suite).scenarios
    if scenario.setup
]


@pytest.mark.parametrize(("suite", "scenario"), SEEDED)
def test_a_seeded_scenario_leaks_nothing_into_the_next_trial(
    suite: str, scenario: Scenario, warm: tuple[Runtime, Settings], tmp_path: Path
) -> None:
    runtime, settings = warm
    assert leak_problem(suite, scenario, runtime, settings, tmp_path) is None


FILESYSTEM_COMMAND = [
    "{python}",
    "-m",
    "mcp_farm.scenarios.servers.filesystem",
    "--root",
    "{sandbox}",
]


def test_an_ideal_agent_fails_on_a_misconfigured_server(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    # The filesystem server started on the notes fixture instead of the home folder: the ideal
    # agent's read fails, so the self-check must fail too, not pass on a lenient matcher.
    suite = tmp_path / "misplaced.yaml"
    suite.write_text(
        yaml.safe_dump(
            {
                "suite": "misplaced",
                "servers": [
                    {
                        "name": "misplaced-fs",
                        "command": FILESYSTEM_COMMAND,
                        "sandbox": "notes",
                    }
                ],
                "scenarios": [
                    {
                        "id": "misplaced.read",
                        "version": 1,
                        "tier": "simple",
                        "prompt": "What does my Desktop to-do list say?",
                        "servers": ["misplaced-fs"],
                        "expect": [
                            {
                                "tool": "read_file",
                                "params": {"path": {"path": "Desktop/todo.txt"}},
                                "example": {"path": "/Desktop/todo.txt"},
                            }
                        ],
                        "example_answer": "Your to-do list is on the Desktop.",
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    scenario = load_suite(str(suite)).scenarios[0]
    runtime, settings = warm
    result = runtime.run(trial(scenario, ideal_script(scenario), suite=str(suite)), settings)
    assert result.outcome == "wrong_params", result.detail
    assert "returned an error" in result.detail
    assert ideal_call_problems(scenario, result) != []


def test_ideal_agents_side_by_side_on_shared_servers_all_pass(tmp_path: Path) -> None:
    # A worker running many sessions per process shares one server process between them; its
    # trials must grade exactly as on servers of their own, with no trial seeing another's
    # writes, while eight run at once.
    settings = Settings(
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'farm.sqlite'}",
        server_start_timeout_s=30,
        sessions=8,
    )
    picked = [
        (suite, scenario)
        for suite in SUITES
        if suite not in THIRD_PARTY
        for scenario in load_suite(suite).scenarios
        if not scenario.user_sim
    ]
    results: dict[str, TrialResult] = {}

    async def run_all(runtime: Runtime) -> None:
        limit = anyio.CapacityLimiter(settings.sessions)

        async def one(suite: str, scenario: Scenario) -> None:
            async with limit:
                spec = trial(scenario, ideal_script(scenario), suite=suite)
                results[scenario.id] = await execute_trial(spec, settings, runtime.pool)

        async with anyio.create_task_group() as tg:
            for suite, scenario in picked:
                tg.start_soon(one, suite, scenario)

    runtime = Runtime(settings)
    try:
        runtime.portal.call(run_all, runtime)
        opened, started = runtime.pool.sessions_opened, runtime.pool.started
    finally:
        runtime.close()
    failed = {
        s.id: (results[s.id].outcome, results[s.id].detail, ideal_call_problems(s, results[s.id]))
        for _suite, s in picked
        if results[s.id].outcome != "pass" or ideal_call_problems(s, results[s.id])
    }
    assert failed == {}
    assert opened >= 8
    assert started < len(picked) / 2
