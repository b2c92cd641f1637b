"""A sweep of conversations, embedded: turns stored with each trial, the scorecard's turn and
conversation rates and first failing turn in every medium, and `farm rescore` grading the
stored turns as the live run did."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from mcp_farm.scenarios import find_scenario
from mcp_farm.scheduler.cli.rescore import rescore
from mcp_farm.scheduler.report.formats import to_markdown
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.queries.samples import sample_trials
from mcp_farm.scheduler.submission.queries import record_scoring
from mcp_farm.schema import (
    JudgeSettings,
    ScenarioSelection,
    Settings,
    SweepSpec,
    TurnResult,
    load_task,
)
from mcp_farm.schema.db import init_db, make_engine
from tests.helpers import ideal_script, run_sweep_embedded, scripted

SCENARIO = find_scenario("conversations", "conv.groceries-two-adds")
FAILS_FIRST = [{"answer": "I can't do that."}, *ideal_script(SCENARIO.turn_scenario(1))]


def test_a_conversation_sweep_stores_turns_and_scores_them_turn_by_turn(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = SweepSpec(
        name="talks",
        models=[scripted(ideal_script(SCENARIO), "ideal"), scripted(FAILS_FIRST, "slips")],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=["conversations"], ids=[SCENARIO.id]),
        repetitions=1,
        paraphrases="verbatim",
    )
    engine, plan = run_sweep_embedded(sweep, settings)
    with engine.begin() as conn:
        stored = conn.execute(
            text("select model_id, trial_id, outcome, turns_json from trial where sweep_id = :s"),
            {"s": plan.sweep_id},
        ).all()
        scoring = record_scoring(conn, plan.sweep_id, JudgeSettings(), "rescore", "test")
    turns = {m: [TurnResult.model_validate(t) for t in json.loads(j)] for m, _i, _o, j in stored}
    assert [t.outcome for t in turns["ideal"]] == ["pass", "pass"]
    assert [t.outcome for t in turns["slips"]] == ["no_tool_call", "pass"]

    card = build_scorecard(engine=engine, sweep_id=plan.sweep_id)
    talks = {c.model: c for c in card.conversations}
    assert (talks["ideal"].passed, talks["ideal"].turns_passed, talks["ideal"].turns) == (1, 2, 2)
    assert (talks["slips"].passed, talks["slips"].turns_passed) == (0, 1)
    assert talks["slips"].first_failing_turn == {"1": 1}
    assert "turn 1: 1" in to_markdown(card)
    page = to_html(card, sample_trials(engine, plan.sweep_id))
    assert "1/2 (50%)" in page
    assert "[assistant, expected turn shown by the farm]" in page
    # Each turn's own verdict, from the stored turns the sample query reads.
    assert "turn 1: no_tool_call (" in page and "turn 2: pass" in page

    for model, trial_id, outcome, _turns in stored:
        summary = load_task("farm.rescore_trial")(
            {"trial_id": trial_id, "scoring_id": scoring, "judge": JudgeSettings().model_dump()},
            settings,
        )
        assert (model, summary.outcome, summary.recorded_outcome) == (model, outcome, outcome)
    rescore(plan.sweep_id, db=settings.resolved_database_url(), data_dir=settings.data_dir)
    assert "no change: all 2 trials graded as recorded" in capsys.readouterr().out


def test_one_prompt_trials_add_no_conversation_rows(settings: Settings) -> None:
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    card = build_scorecard(engine=engine, sweep_id="none-such")
    assert card.conversations == []
    assert "Conversations" not in to_markdown(card)
