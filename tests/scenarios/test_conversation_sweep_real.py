"""The bundled conversation sweep, as shipped, run embedded by the bundled model on three of its
conversations (a turn that must ask, a tool list that changes, a server that asks the user):
every turn is graded and stored, and the scorecard holds its conversation block. Slow (the real
model); CI runs it. It checks the plumbing with a real model, not how well a 270M model talks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text

from mcp_farm.scenarios import find_scenario
from mcp_farm.scheduler.scorecard.aggregate import scorecard_of
from mcp_farm.scheduler.submission.expand import load_sweep
from mcp_farm.schema import OUTCOMES, UNGRADED, ScenarioSelection, Settings
from tests.helpers import run_sweep_embedded
from tests.workers.model.test_real_models import _needs_llama

pytestmark = [pytest.mark.slow, pytest.mark.integration]

SWEEP = Path(__file__).resolve().parents[2] / "scenarios" / "sweeps" / "conversations.yaml"
IDS = [
    "conv.haircut-ask-time",
    "conv.workspace-archive-after-upgrade",
    "conv.office-delete-declined",
]


def test_the_bundled_conversation_sweep_runs_embedded_on_the_bundled_model(
    settings: Settings,
) -> None:
    _needs_llama()
    shipped = load_sweep(SWEEP)
    assert shipped.models[0].adapter == "local" and shipped.on_turn_failure == "continue"
    sweep = shipped.model_copy(
        update={"scenarios": ScenarioSelection(suites=["conversations"], ids=IDS)}
    )
    engine, plan = run_sweep_embedded(sweep, settings, str(SWEEP))
    with engine.connect() as conn:
        rows = conn.execute(
            text("select scenario_id, outcome, detail, turns_json from trial where sweep_id = :s"),
            {"s": plan.sweep_id},
        ).all()
    assert sorted(r.scenario_id for r in rows) == sorted(IDS)
    for row in rows:
        assert row.outcome not in UNGRADED, (row.scenario_id, row.detail)
        turns = json.loads(row.turns_json)
        # `continue`: a failed first turn does not end the conversation, every turn is graded.
        assert len(turns) == len(find_scenario("conversations", row.scenario_id).turns)
        assert all(turn["outcome"] in OUTCOMES for turn in turns), turns
    [block] = scorecard_of(engine=engine, sweep_id=plan.sweep_id).conversations
    assert block.model == "gemma3-270m" and block.conversations == len(IDS)
    assert block.turns == sum(len(json.loads(r.turns_json)) for r in rows)
