"""A suite author's own suite through the self-checks: its route and one-of mistakes are read
off the scenario (no hand-written entry in the tests), and `FARM_SELFCHECK_SUITES` runs the
whole self-check on it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import Settings
from mcp_farm.workers.mcp.pool import REPO_ROOT
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import trial
from tests.scenarios.mistakes import ROUTE_MISTAKES, alternate_calls

pytestmark = pytest.mark.integration

OWN_SUITE = """\
suite: own
scenarios:
  - id: own.todo
    version: 1
    tier: moderate
    prompt: What's on my Desktop to-do list?
    paraphrases: [Read me the to-do list on my Desktop.]
    servers: [filesystem]
    routes:
      - name: straight
        expect:
          - tool:
              one_of:
                - read_file
                - name: read_file_metadata
                  params: {path: {path: Desktop/todo.txt}}
                  example: {path: Desktop/todo.txt}
            params: {path: {path: Desktop/todo.txt}}
            example: {path: Desktop/todo.txt}
      - name: look-first
        expect:
          - tool: list_directory
            params: {path: {path: Desktop}}
            example: {path: Desktop}
          - tool: get_file_info
            params: {path: {path: Desktop/todo.txt}}
            example: {path: Desktop/todo.txt}
    final_answer: passport
    example_answer: Renew your passport before March, and call the plumber.
"""

SELFCHECK_LIMIT_S = 540
"""How long the self-check of the one-scenario suite may run before the test calls it hung."""


@pytest.fixture
def own_suite(tmp_path: Path) -> Path:
    path = tmp_path / "own.yaml"
    path.write_text(OWN_SUITE, encoding="utf-8")
    return path


def test_route_and_one_of_mistakes_are_read_off_an_outside_scenario(
    own_suite: Path, warm: tuple[Runtime, Settings]
) -> None:
    from tests.scenarios.test_selfcheck import mistakes

    scenario = load_suite(str(own_suite)).scenarios[0]
    assert scenario.id not in ROUTE_MISTAKES
    found = {name: (script, outcome) for name, script, outcome in mistakes(scenario)}
    assert alternate_calls(scenario) == [
        ("straight", 0, "read_file_metadata", {"path": "Desktop/todo.txt"})
    ]
    assert found["uses-read_file_metadata-instead@straight"][1] == "pass"
    mixed, outcome = found["mixes-routes-straight-and-look-first"]
    assert outcome == "wrong_tool"
    assert [step["call"]["name"] for step in mixed[:-1]] == ["read_file", "get_file_info"]
    runtime, settings = warm
    for name in (
        "uses-read_file_metadata-instead@straight",
        "mixes-routes-straight-and-look-first",
    ):
        script, outcome = found[name]
        result = runtime.run(trial(scenario, script, suite=str(own_suite)), settings)
        assert result.outcome == outcome, (name, result.detail)


def test_the_self_check_runs_on_a_suite_named_in_farm_selfcheck_suites(own_suite: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-x",
            "tests/scenarios/test_selfcheck.py",
            "-k",
            "not side_by_side and not misconfigured",
        ],
        capture_output=True,
        text=True,
        timeout=SELFCHECK_LIMIT_S,
        cwd=REPO_ROOT,
        env={**os.environ, "FARM_SELFCHECK_SUITES": str(own_suite)},
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " skipped" in done.stdout, done.stdout[-2000:]


NUMBERS_SUITE = """\
suite: own-numbers
scenarios:
  - id: own.newest-mail
    version: 1
    tier: simple
    prompt: Show me my three newest emails.
    paraphrases: [List the three most recent messages in my inbox.]
    servers: [email]
    expect:
      - tool: list_inbox
        params: {limit: 3}
        example: {limit: 3}
    example_answer: Here are your three newest emails.
"""


def test_a_whole_number_of_an_outside_tool_is_judged_by_the_servers_own_schema(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    # Issue 36, item 17: a hand-written table of parameter types failed the self-check's
    # collection for any outside tool with an `exact` whole number; the schema decides now.
    from tests.scenarios.mistakes_match import outcome_by_schema
    from tests.scenarios.test_selfcheck import mistakes

    path = tmp_path / "numbers.yaml"
    path.write_text(NUMBERS_SUITE, encoding="utf-8")
    scenario = load_suite(str(path)).scenarios[0]
    found = {name: (script, outcome) for name, script, outcome in mistakes(scenario)}
    script, outcome = found["sends-limit-as-a-float"]
    runtime, settings = warm
    # The email server types `limit` as `integer`: 3.0 is not what it asked for.
    assert outcome_by_schema(outcome, str(path), scenario, settings) == "wrong_params"
    result = runtime.run(trial(scenario, script, suite=str(path)), settings)
    assert result.outcome == "wrong_params", result.detail
