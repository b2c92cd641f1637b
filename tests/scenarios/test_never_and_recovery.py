"""Calls that must never happen and recovery after an error, through the real fixture servers:
a forbidden call and a destructive call before the user confirmed are `forbidden_call`, the
servers' `destructiveHint` reaches the model only under `show_annotations`, and a sweep's
scorecard counts the trials that recovered after an error result in every medium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from mcp_farm.scenarios import load_prompt, load_suite
from mcp_farm.scheduler.report.formats import to_markdown
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.schema import Scenario, ScenarioSelection, Settings, SweepSpec, TrialSpec
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import ideal_script, run_sweep_embedded, scripted, trial

pytestmark = pytest.mark.integration

SUITE = load_suite("conversations")
BY_ID = {s.id: s for s in SUITE.scenarios}
# Confirmed by a user turn (`confirms: true`); one confirmed through elicitation instead is
# tests/scenarios/test_elicitation.py's.
CONFIRMING = [
    s for s in SUITE.scenarios if s.confirm_destructive and any(t.confirms for t in s.turns)
]
NEVER = [s for s in SUITE.scenarios if "never" in s.tags]
RECOVERY = [s for s in SUITE.scenarios if "recovery" in s.tags]

FORBIDDEN: dict[str, tuple[int, dict[str, Any]]] = {
    "conv.standup-keep-review": (
        1,
        {"name": "cancel_event", "arguments": {"event_id": "evt-1005"}},
    ),
    "conv.priya-reply-only": (
        1,
        {"name": "reply_to_email", "arguments": {"email_id": "msg-1043", "body": "Friday works."}},
    ),
    "conv.dana-agenda-append-only": (
        1,
        {"name": "update_note", "arguments": {"note_id": "1-1-with-dana", "content": "budget"}},
    ),
    "conv.jonas-draft-not-send": (
        1,
        {"name": "reply_to_email", "arguments": {"email_id": "msg-1043", "body": "By Wednesday."}},
    ),
}
"""Per `never:` scenario: the turn of the scripted mistake and the forbidden call made in it."""


def _turn(scenario: Scenario, i: int) -> list[dict[str, Any]]:
    return ideal_script(scenario.turn_scenario(i))


def test_the_suite_holds_five_never_or_confirm_and_five_recovery_conversations() -> None:
    assert len(NEVER) >= 5
    assert all(s.never or any(t.never for t in s.turns) or s.confirm_destructive for s in NEVER)
    assert len(CONFIRMING) >= 2
    assert len(RECOVERY) >= 5
    assert all(any(st.expect_error for t in s.turns for st in t.expect) for s in RECOVERY)


@pytest.mark.parametrize("scenario", CONFIRMING, ids=lambda s: s.id)
def test_a_destructive_call_before_the_user_confirmed_is_a_forbidden_call(
    scenario: Scenario, warm: tuple[Runtime, Settings]
) -> None:
    hasty = [item for item in _turn(scenario, 1) if "call" in item]
    script = [*hasty, {"answer": "Done."}, *_turn(scenario, 1)]
    runtime, settings = warm
    result = runtime.run(trial(scenario, script, suite="conversations"), settings)
    assert result.outcome == "forbidden_call", result.detail
    assert result.turn_results[0].outcome == "forbidden_call"
    assert "destructive" in result.detail


@pytest.mark.parametrize("scenario_id", sorted(FORBIDDEN))
def test_a_call_that_never_names_fails_its_turn_as_a_forbidden_call(
    scenario_id: str, warm: tuple[Runtime, Settings]
) -> None:
    scenario = BY_ID[scenario_id]
    at, call = FORBIDDEN[scenario_id]
    script: list[dict[str, Any]] = []
    for i in range(len(scenario.turns)):
        script += ([{"call": call}] if i == at else []) + _turn(scenario, i)
    runtime, settings = warm
    result = runtime.run(trial(scenario, script, suite="conversations"), settings)
    assert result.outcome == "forbidden_call", result.detail
    assert result.turn_results[at].outcome == "forbidden_call"
    assert "`never` forbids" in result.turn_results[at].detail


def test_annotations_reach_the_model_only_under_show_annotations(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = BY_ID["conv.cancel-yoga-confirm"]
    runtime, settings = warm
    shown = load_prompt("json").model_copy(update={"show_annotations": True})
    plain = runtime.run(
        trial(scenario, ideal_script(scenario), suite="conversations", prompt="json"), settings
    )
    hinted = runtime.run(
        trial(scenario, ideal_script(scenario), suite="conversations", prompt=shown), settings
    )
    assert "destructiveHint" not in plain.transcript[0].content
    assert "Annotations: destructiveHint: true" in hinted.transcript[0].content
    assert "Annotations: readOnlyHint: true" in hinted.transcript[0].content
    assert (plain.outcome, hinted.outcome) == ("pass", "pass")
    assert plain.trial_id != hinted.trial_id


@pytest.mark.parametrize("scenario", RECOVERY, ids=lambda s: s.id)
def test_an_agent_that_does_the_step_after_the_error_has_recovered(
    scenario: Scenario, warm: tuple[Runtime, Settings]
) -> None:
    runtime, settings = warm
    result = runtime.run(trial(scenario, ideal_script(scenario), suite="conversations"), settings)
    assert result.outcome == "pass", result.detail
    assert [c.ok for c in result.tool_calls].count(False) == 1
    assert result.recovered is True


def test_a_trial_without_a_failed_call_has_no_recovery_verdict(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = BY_ID["conv.standup-keep-review"]
    runtime, settings = warm
    result = runtime.run(trial(scenario, ideal_script(scenario), suite="conversations"), settings)
    assert result.outcome == "pass", result.detail
    assert result.recovered is None


def test_an_invented_tool_name_is_not_an_error_result_on_the_real_servers(
    warm: tuple[Runtime, Settings],
) -> None:
    # Issue 36, item 22: inventing a tool lowered the recovery rate though no server answered
    # with an error.
    scenario = BY_ID["conv.standup-keep-review"]
    made = _turn(scenario, 0)
    invented = {"call": {"name": "delete_everything_now", "arguments": {}}}
    script = [invented, *made, *ideal_script(scenario)[len(made) :]]
    runtime, settings = warm
    result = runtime.run(trial(scenario, script, suite="conversations"), settings)
    assert [c.server for c in result.tool_calls][:1] == [None]
    assert result.tool_calls[0].ok is False
    assert result.recovered is None


def _gives_up(scenario: Scenario) -> list[dict[str, Any]]:
    """The failing call of turn 1, then no other: the model gives up after the error."""
    first = _turn(scenario, 0)
    return [first[0], {"answer": "That didn't work, sorry."}]


def test_a_sweep_counts_recovery_after_an_error_per_row_in_every_medium(
    settings: Settings,
) -> None:
    scenarios = [s.id for s in RECOVERY]
    gives_up = {s.id: _gives_up(s) for s in RECOVERY}
    sweep = SweepSpec(
        name="recovery",
        models=[
            scripted(ideal_script(BY_ID[scenarios[0]]), "recovers"),
            scripted(gives_up[scenarios[0]], "gives-up"),
        ],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=["conversations"], ids=[scenarios[0]]),
        repetitions=1,
        paraphrases="verbatim",
    )
    engine, plan = run_sweep_embedded(sweep, settings)
    card = build_scorecard(engine=engine, sweep_id=plan.sweep_id)
    configs = {r.model: r for r in card.of("config")}
    assert (configs["recovers"].errored, configs["recovers"].recovered) == (1, 1)
    assert (configs["gives-up"].errored, configs["gives-up"].recovered) == (1, 0)
    assert configs["recovers"].recovery_rate == 1.0
    assert configs["gives-up"].recovery_rate == 0.0
    assert "| recovered |" in to_markdown(card)
    assert "1/1 (100%)" in to_markdown(card)
    assert "0/1 (0%)" in to_html(card)
    console = Console(record=True, width=200)
    print_scorecard(card, console)
    assert "recovered" in console.export_text()
    assert '"recovery_rate"' in card.model_dump_json()


@pytest.mark.parametrize("scenario", RECOVERY, ids=lambda s: s.id)
def test_giving_up_after_an_error_fails_the_turn(
    scenario: Scenario, warm: tuple[Runtime, Settings]
) -> None:
    runtime, settings = warm
    result = runtime.run(trial(scenario, _gives_up(scenario), suite="conversations"), settings)
    assert result.outcome != "pass"
    assert result.turn_results[0].outcome in ("wrong_sequence", "wrong_params"), result.detail
    assert [c.ok for c in result.tool_calls] == [False]
    assert result.recovered is False


def test_a_step_of_a_later_turn_does_not_count_as_recovering_an_earlier_turns_error(
    warm: tuple[Runtime, Settings],
) -> None:
    # The model gives up after turn 1's error; under `continue` turn 2's append is the next
    # step it does, which answers another request and is no recovery.
    scenario = BY_ID["conv.grocery-list-wrong-id"]
    spec = trial(scenario, [*_gives_up(scenario), *_turn(scenario, 1)], suite="conversations")
    spec = TrialSpec.model_validate(
        spec.model_dump(mode="json", exclude={"trial_id"}) | {"on_turn_failure": "continue"}
    )
    runtime, settings = warm
    result = runtime.run(spec, settings)
    assert [t.outcome for t in result.turn_results] == ["wrong_sequence", "pass"], result.detail
    assert [c.ok for c in result.tool_calls] == [False, True]
    assert result.recovered is False


def test_a_sweeps_confirm_destructive_holds_a_conversation_without_a_confirming_turn(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = BY_ID["conv.cancel-which-meeting"]
    spec = trial(scenario, ideal_script(scenario), suite="conversations")
    ruled = TrialSpec.model_validate(
        spec.model_dump(mode="json", exclude={"trial_id"}) | {"confirm_destructive": True}
    )
    runtime, settings = warm
    assert runtime.run(spec, settings).outcome == "pass"
    result = runtime.run(ruled, settings)
    assert [t.outcome for t in result.turn_results] == ["pass", "forbidden_call"], result.detail


def test_a_sweeps_confirm_destructive_is_set_on_conversation_trials_only() -> None:
    sweep = SweepSpec(
        name="careful",
        models=[scripted([], "m")],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=["basic", "conversations"]),
        repetitions=1,
        paraphrases="verbatim",
        confirm_destructive=True,
    )
    trials = expand(sweep, "test").trials
    talks = {t.confirm_destructive for t in trials if t.scenario.suite == "conversations"}
    others = {t.confirm_destructive for t in trials if t.scenario.suite != "conversations"}
    assert (talks, others) == ({True}, {None})


def test_over_streamable_http_a_shared_server_grades_never_confirm_and_recovery_alike(
    tmp_path: Path,
) -> None:
    # Several sessions per worker share one server process over streamable HTTP: the
    # destructive hint, the error results and the grading must come through it unchanged.
    settings = Settings(
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'farm.sqlite'}",
        server_start_timeout_s=30,
        sessions=2,
    )
    confirm = BY_ID["conv.cancel-yoga-confirm"]
    hasty = [item for item in _turn(confirm, 1) if "call" in item]
    wrong_id = BY_ID["conv.dentist-wrong-id"]
    runtime = Runtime(settings)
    try:
        ideal = runtime.run(trial(confirm, ideal_script(confirm), suite="conversations"), settings)
        script = [*hasty, {"answer": "Done."}, *_turn(confirm, 1)]
        rushed = runtime.run(trial(confirm, script, suite="conversations"), settings)
        fixed = runtime.run(
            trial(wrong_id, ideal_script(wrong_id), suite="conversations"), settings
        )
        shared = dict(runtime.pool._shared)
    finally:
        runtime.close()
    assert shared, "no server was shared over HTTP"
    assert (ideal.outcome, rushed.outcome) == ("pass", "forbidden_call"), rushed.detail
    assert (fixed.outcome, fixed.recovered) == ("pass", True), fixed.detail
