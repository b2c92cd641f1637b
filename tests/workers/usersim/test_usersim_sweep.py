"""A sweep with a simulated user, embedded: the user's errors, identity and the failure's
source stored with each trial; the scorecard's pass rate over all trials and over those
without a user error, side by side, in every medium, and saying when a config's rates pool
several simulated users; `farm rescore` grading them as the live run did."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from sqlalchemy import text

from mcp_farm.scheduler.report.formats import to_markdown
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.queries.samples import sample_trials
from mcp_farm.scheduler.submission.queries import record_scoring
from mcp_farm.schema import (
    JudgeSettings,
    ScenarioSelection,
    Settings,
    SweepSpec,
    UserIdentity,
    UserModel,
    load_task,
)
from tests.helpers import run_sweep_embedded, scripted
from tests.workers.usersim.test_simulated_user import IDEAL

pytestmark = pytest.mark.integration

DENTIST = "usersim.dentist-ask-time"
GROCERIES = "usersim.groceries-ask-item"


def test_a_sweep_stores_user_errors_and_scores_with_and_without_them(
    settings: Settings,
) -> None:
    agent, user = IDEAL[DENTIST]
    # One agent and one user for both scenarios: on the dentist's card the user's answer is
    # true; asked the same question about groceries, it names a time and a length that card
    # never gave, and the agent's calendar call that follows is the user's fault.
    sweep = SweepSpec(
        name="users",
        models=[scripted(agent, "dentist-agent")],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=["usersim"], ids=[DENTIST, GROCERIES]),
        repetitions=1,
        user_model=UserModel(model=scripted(user, "user-script"), temperature=0.0),
    )
    engine, plan = run_sweep_embedded(sweep, settings)
    with engine.begin() as conn:
        stored = conn.execute(
            text(
                "select scenario_id, trial_id, outcome, user_errors, failure_source, "
                "user_identity, tokens_completion, user_sim_json from trial "
                "where sweep_id = :s order by scenario_id"
            ),
            {"s": plan.sweep_id},
        ).all()
        scoring = record_scoring(conn, plan.sweep_id, JudgeSettings(), "rescore", "test")
    by_id = {row.scenario_id: row for row in stored}
    assert [by_id[DENTIST][i] for i in (2, 3, 4)] == ["pass", 0, "none"]
    assert [by_id[GROCERIES][i] for i in (2, 3, 4)] == ["wrong_tool", 1, "user"]
    assert by_id[DENTIST].user_identity.startswith("user-script t=0 max_tokens=160 guideline v1 (")
    assert by_id[DENTIST].tokens_completion == 3 * 8
    assert json.loads(by_id[GROCERIES].user_sim_json)["errors"][0]["facts"] == [
        "15:00",
        "45 minutes",
    ]

    card = build_scorecard(engine=engine, sweep_id=plan.sweep_id)
    [users] = card.simulated_users
    assert (users.trials, users.passed, users.clean, users.clean_passed) == (2, 1, 1, 1)
    assert (users.user_failures, users.agent_failures) == (1, 0)
    assert users.users == [by_id[DENTIST].user_identity]
    row = "| dentist-agent | native | 2 | 1/2 (50%) | 1/1 (100%) | 1 | 0 |"
    assert row in to_markdown(card)
    page = to_html(card, sample_trials(engine, plan.sweep_id))
    assert "<h2>Simulated users</h2>" in page and "1/1 (100%)" in page
    console = Console(record=True, width=200)
    print_scorecard(card, console)
    assert "pass (no user error)" in console.export_text()
    assert json.loads(card.model_dump_json())["simulated_users"][0]["clean_rate"] == 1.0

    for scenario_id, trial_id, outcome, *_rest in stored:
        summary = load_task("farm.rescore_trial")(
            {"trial_id": trial_id, "scoring_id": scoring, "judge": JudgeSettings().model_dump()},
            settings,
        )
        assert (scenario_id, summary.outcome) == (scenario_id, outcome)


def test_a_user_that_left_early_is_stored_as_its_fault_and_rescored_as_it_ran(
    settings: Settings,
) -> None:
    sweep = SweepSpec(
        name="early",
        models=[scripted([{"answer": "What time does it start?"}], "asking-agent")],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=["usersim"], ids=[DENTIST]),
        repetitions=1,
        user_model=UserModel(
            model=scripted([{"answer": "Never mind. ###STOP###"}], "leaving-user"),
            temperature=0.0,
        ),
    )
    engine, plan = run_sweep_embedded(sweep, settings)
    with engine.begin() as conn:
        [(trial_id, outcome, errors, source, record)] = conn.execute(
            text(
                "select trial_id, outcome, user_errors, failure_source, user_sim_json "
                "from trial where sweep_id = :s"
            ),
            {"s": plan.sweep_id},
        ).all()
        scoring = record_scoring(conn, plan.sweep_id, JudgeSettings(), "rescore", "test")
    assert (outcome, errors, source) == ("no_tool_call", 1, "user")
    [error] = json.loads(record)["errors"]
    assert (error["kind"], error["message"], error["said"]) == ("left_early", 1, "Never mind.")
    summary = load_task("farm.rescore_trial")(
        {"trial_id": trial_id, "scoring_id": scoring, "judge": JudgeSettings().model_dump()},
        settings,
    )
    assert summary.outcome == outcome


def test_a_config_that_met_two_simulated_users_says_its_rates_pool_them(
    settings: Settings,
) -> None:
    agent, user = IDEAL[DENTIST]
    sweep = SweepSpec(
        name="pooled",
        models=[scripted(agent, "dentist-agent")],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=["usersim"], ids=[DENTIST]),
        repetitions=2,
        user_model=UserModel(model=scripted(user, "user-script"), temperature=0.5),
    )
    engine, plan = run_sweep_embedded(sweep, settings)
    card = build_scorecard(engine=engine, sweep_id=plan.sweep_id)
    [alone] = card.simulated_users
    assert len(alone.users) == 1
    assert "the rates pool" not in to_markdown(card)
    # A second worker whose user model reported other pins: the same sweep, another user.
    other = UserIdentity(
        model_id="user-script",
        model_key="elsewhere",
        pins={"adapter": "scripted", "build": "b2"},
        temperature=0.5,
        seed=1,
        guideline="v1",
    ).pool_key
    with engine.begin() as conn:
        conn.execute(
            text("update trial set user_identity = :u where sweep_id = :s and repetition = 1"),
            {"u": other, "s": plan.sweep_id},
        )
    card = build_scorecard(engine=engine, sweep_id=plan.sweep_id)
    [pooled] = card.simulated_users
    assert sorted(pooled.users) == sorted([alone.users[0], other])
    note = "dentist-agent × native: the rates pool 2 different simulated users: "
    console = Console(record=True, width=400)
    print_scorecard(card, console)
    for shown in (to_markdown(card), to_html(card), console.export_text()):
        assert note in shown
        assert other in shown
