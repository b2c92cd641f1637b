"""Real servers that report failures as text (`error_pattern`), results longer than the model
is shown (`result_chars`), and strict call counts, against a real MCP server over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import (
    ModelTarget,
    Settings,
    TrialResult,
)
from mcp_farm.workers.trial import execute_trial
from tests.fake_openai import (
    Behaviour,
    fake_openai,
)
from tests.helpers import trial

pytestmark = pytest.mark.integration
SERVER = Path(__file__).resolve().parent.parent / "servers" / "textual.py"
PATTERN = '    error_pattern: "^(Error|Database error):"'
SCENARIOS = """
  - id: text.lookup
    version: 1
    tier: simple
    prompt: What is stored under alpha?
    servers: [textual]
    expect:
      - tool: lookup
        params: {key: alpha}
  - id: text.missing
    version: 1
    tier: simple
    prompt: Is anything stored under gamma?
    servers: [textual]
    expect:
      - tool: lookup
        params: {key: gamma}
        expect_error: true
  - id: text.seeded
    version: 1
    tier: simple
    prompt: What is stored under alpha?
    servers: [textual]
    setup:
      - {tool: store, arguments: {key: "", value: x}}
    expect:
      - tool: lookup
  - id: text.long
    version: 1
    tier: complex
    prompt: Open a ticket for the status report's reference code.
    servers: [textual]
    expect:
      - tool: full_report
      - tool: open_ticket
        params: {reference: {derived_from_step: 0, from_regex: "Reference code: (\\\\S+)"}}
"""


def _suite(tmp_path: Path, pattern: str = PATTERN, extra: str = "") -> str:
    server = (
        f'  - name: textual\n    command: ["{{python}}", "{SERVER}"]\n    reuse: false\n'
        f"{pattern}\n{extra}"
    )
    path = tmp_path / "textual.yaml"
    path.write_text(f"suite: textual\nservers:\n{server}\nscenarios:{SCENARIOS}")
    return str(path)


def _run(
    suite: str, n: int, script: list[dict[str, Any]], settings: Settings, **update: Any
) -> TrialResult:
    scenario = load_suite(suite).scenarios[n]
    spec = trial(scenario, script, suite=suite)
    if update:
        spec = type(spec).model_validate(spec.model_dump() | update | {"trial_id": ""})
    return anyio.run(execute_trial, spec, settings)


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"call": {"name": name, "arguments": arguments}}


WRONG_THEN_RIGHT = [_call("lookup", key="alhpa"), _call("lookup", key="alpha"), {"answer": "42"}]


def test_an_error_reported_as_text_is_a_failed_call(tmp_path: Path, settings: Settings) -> None:
    result = _run(_suite(tmp_path), 0, WRONG_THEN_RIGHT, settings)
    assert [c.ok for c in result.tool_calls] == [False, True]
    assert "no entry named 'alhpa'" in (result.tool_calls[0].error or "")
    # The model saw the server's own words, not a doubled "Error: Error:".
    shown = [m.content for m in result.transcript if m.role == "tool"]
    assert shown[0] == "Error: no entry named 'alhpa'"
    assert result.outcome == "pass" and result.first_try is False
    # Without the pattern, the same text is a call that worked.
    plain = _run(_suite(tmp_path, pattern=""), 0, WRONG_THEN_RIGHT, settings)
    assert [c.ok for c in plain.tool_calls] == [True, True]


def test_a_text_error_meets_expect_error_and_only_with_the_pattern(
    tmp_path: Path, settings: Settings
) -> None:
    script = [_call("lookup", key="gamma"), {"answer": "Nothing is stored under gamma."}]
    assert _run(_suite(tmp_path), 1, script, settings).outcome == "pass"
    without = _run(_suite(tmp_path, pattern=""), 1, script, settings)
    assert without.outcome == "wrong_params" and "expected to fail" in without.detail


def test_a_setup_call_that_fails_as_text_is_an_infra_error(
    tmp_path: Path, settings: Settings
) -> None:
    result = _run(_suite(tmp_path), 2, [_call("lookup", key="alpha")], settings)
    assert result.outcome == "infra_error"
    assert "setup[0] textual.store failed" in result.detail
    assert "a key cannot be empty" in result.detail


def test_a_long_result_is_cut_for_the_model_but_chained_from_whole(
    tmp_path: Path, settings: Settings
) -> None:
    script = [_call("full_report"), _call("open_ticket", reference="RX-4471"), {"answer": "done"}]
    result = _run(_suite(tmp_path), 3, script, settings)
    assert result.outcome == "pass", result.detail
    report = result.tool_calls[0].result_text
    assert "RX-4471" not in report  # the model was not shown the last line
    assert report.endswith("more characters not shown]")
    assert len(report) < 4100
    # A larger limit, from the server or from the sweep, shows it all.
    roomy = _run(_suite(tmp_path, extra="    result_chars: 20000"), 3, script, settings)
    assert "RX-4471" in roomy.tool_calls[0].result_text
    by_sweep = _run(_suite(tmp_path), 3, script, settings, result_chars=20000)
    assert "RX-4471" in by_sweep.tool_calls[0].result_text
    # The chained value is the one captured: an addend of the text does not pass.
    wrong = [_call("full_report"), _call("open_ticket", reference="nominal"), {"answer": "x"}]
    assert _run(_suite(tmp_path), 3, wrong, settings).outcome == "wrong_params"


def test_strict_call_counts_refuse_a_wrong_attempt_and_a_repeat(
    tmp_path: Path, settings: Settings
) -> None:
    strict = _run(_suite(tmp_path), 0, WRONG_THEN_RIGHT, settings, calls="strict")
    assert strict.outcome == "wrong_params"
    assert "calls: strict: call 0 (lookup) failed" in strict.detail
    repeat = [_call("lookup", key="alpha"), _call("lookup", key="alpha"), {"answer": "42"}]
    assert _run(_suite(tmp_path), 0, repeat, settings).outcome == "pass"  # lenient: 2 allowed
    looped = _run(_suite(tmp_path), 0, repeat, settings, calls="strict")
    assert looped.outcome == "tool_loop" and looped.turns == 2
    once = [_call("lookup", key="alpha"), {"answer": "42"}]
    clean = _run(_suite(tmp_path), 0, once, settings, calls="strict")
    assert clean.outcome == "pass" and clean.first_try is True


@pytest.mark.parametrize("mode", ["native", "json", "grammar"])
def test_what_the_server_says_about_itself_reaches_the_model(
    tmp_path: Path, settings: Settings, mode: str
) -> None:
    told = '    instructions: "alpha is the production key;\\nbeta is for tests."'
    suite = _suite(tmp_path, extra=told)
    scenario = load_suite(suite).scenarios[0]
    result = anyio.run(
        execute_trial, trial(scenario, WRONG_THEN_RIGHT, suite=suite, prompt=mode), settings
    )
    system = result.transcript[0].content
    assert result.transcript[0].role == "system"
    # The server's initialize instructions first, then the definition's, under its name.
    assert (
        "About the servers:\n- textual: Keys are lower-case names; every value is stored as "
        "text.\n  alpha is the production key;\n  beta is for tests." in system
    )
    assert ("Tools:" in system) == (mode != "native")


def test_in_grammar_mode_an_endpoint_is_sent_what_the_server_says_about_itself(
    tmp_path: Path, settings: Settings
) -> None:
    # Through the openai adapter to a real HTTP endpoint: the system message it receives.
    told = '    instructions: "alpha is the production key."'
    suite = _suite(tmp_path, extra=told)
    scenario = load_suite(suite).scenarios[0]
    behaviour = Behaviour(models=["m"], answer='{"answer": "42"}')
    with fake_openai(behaviour) as endpoint:
        target = ModelTarget(id="fake", adapter="openai", model="m", endpoint=endpoint.url)
        spec = trial(scenario, [], suite=suite, prompt="grammar")
        spec = spec.model_copy(update={"model": target})
        result = anyio.run(execute_trial, spec, settings)
    assert result.outcome != "infra_error", result.detail
    (system,) = behaviour.seen_systems
    assert "About the servers:\n- textual: Keys are lower-case names" in system
    assert "alpha is the production key." in system
    assert behaviour.seen_formats == ["json_schema"]


@pytest.mark.parametrize(
    ("wrong", "said"),
    [
        # The server's own text, which only its `error_pattern` marks as a failure.
        (_call("lookup", key="alhpa"), "no entry named 'alhpa'"),
        # Arguments the server refused (a number where its schema wants text), which the SDK
        # returns to the client as an error result.
        (_call("lookup", key=5), "validation error"),
    ],
    ids=["error_pattern", "refused_arguments"],
)
def test_a_text_error_and_refused_arguments_are_errors_recovery_counts(
    wrong: dict[str, Any], said: str, tmp_path: Path, settings: Settings
) -> None:
    fixed = _run(_suite(tmp_path), 0, [wrong, *WRONG_THEN_RIGHT[1:]], settings)
    assert [c.ok for c in fixed.tool_calls] == [False, True]
    assert said in (fixed.tool_calls[0].error or "")
    assert (fixed.outcome, fixed.recovered) == ("pass", True)
    gave_up = _run(_suite(tmp_path), 0, [wrong, {"answer": "Nothing there."}], settings)
    assert gave_up.recovered is False
