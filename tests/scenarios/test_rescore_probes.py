"""`farm rescore` on a sweep of one-prompt trials with state probes: it grades them again
(it refused such a sweep before, having no answer to score and no turns), judges each
recorded probe finding again, and lists each trial whose outcome or probe verdict changed,
`id: before → after`, as `farm replay` lists its changes (issue 43, item 7)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine, text

from mcp_farm.scenarios import find_scenario
from mcp_farm.scheduler.cli.rescore import rescore
from mcp_farm.schema import ScenarioSelection, Settings, SweepSpec
from tests.helpers import ideal_script, run_sweep_embedded, scripted

SCENARIO = find_scenario("state", "state.notes-groceries-once")


def _edit_probe(engine: Engine, trial_id: str, **changes: object) -> None:
    """Change the trial's one recorded probe result in place (as a grader change would judge
    it differently now)."""
    with engine.begin() as conn:
        (stored,) = conn.execute(
            text("select state_json from trial where trial_id = :t"), {"t": trial_id}
        ).one()
        state = json.loads(stored)
        state["probes"][0].update(changes)
        conn.execute(
            text("update trial set state_json = :j where trial_id = :t"),
            {"j": json.dumps(state), "t": trial_id},
        )


def test_rescore_regrades_one_prompt_trials_by_their_probes_and_lists_each_change(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = SweepSpec(
        name="probed",
        models=[
            scripted(ideal_script(SCENARIO), "ideal"),
            scripted(ideal_script(SCENARIO), "also"),
        ],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=["state"], ids=[SCENARIO.id]),
        repetitions=1,
        paraphrases="verbatim",
    )
    engine, plan = run_sweep_embedded(sweep, settings)
    with engine.connect() as conn:
        rows: dict[str, str] = dict(
            conn.execute(
                text("select model_id, trial_id from trial where sweep_id = :s"),
                {"s": plan.sweep_id},
            ).all()
        )
        outcomes = conn.execute(
            text("select outcome, state_json from trial where sweep_id = :s"), {"s": plan.sweep_id}
        ).all()
    assert [o for o, _ in outcomes] == ["pass", "pass"]
    assert all(json.loads(s)["probes"] for _, s in outcomes)

    db = settings.resolved_database_url()
    rescore(plan.sweep_id, db=db, data_dir=settings.data_dir)
    said = capsys.readouterr().out
    assert "re-grading 2 trial(s)" in said and "no change: all 2 trials graded as recorded" in said

    # One trial's finding now holds the item twice (its probe fails, so under `both` the
    # trial is wrong_state); the other's probe was recorded as failed, and passes now.
    found = json.loads(json.loads(outcomes[0][1])["probes"][0]["found"])
    found["notes"]["groceries"]["body"] += "\n- oat milk"
    _edit_probe(engine, rows["ideal"], found=json.dumps(found))
    _edit_probe(engine, rows["also"], problem="recorded as failing")
    rescore(plan.sweep_id, db=db, data_dir=settings.data_dir)
    said = capsys.readouterr().out
    assert "2 of 2 trials changed on re-grading (1 outcome(s))" in said
    label = "probe 'oat milk is on the list once'"
    assert f"{rows['ideal']}: pass → wrong_state\n    {label}: passed → failed" in said
    assert f"{rows['also']}: pass\n    {label}: failed → passed" in said
