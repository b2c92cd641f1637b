"""The bundled conversation sweep, as shipped, run by the bundled model: the file expands to
its conversations on the local model, and one of them (a turn that must ask, then the detail)
runs embedded with every turn graded and kept. Slow (the real model); CI runs it. It checks
the plumbing with a real model, not how well a 270M model talks."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcp_farm.scenarios import find_scenario
from mcp_farm.scheduler.submission.expand import expand, load_sweep
from mcp_farm.schema import OUTCOMES, UNGRADED, Settings, TrialSpec
from mcp_farm.workers.trial import execute_trial
from tests.workers.model.test_real_models import _needs_llama

pytestmark = [pytest.mark.slow, pytest.mark.integration]

SWEEP = Path(__file__).resolve().parents[2] / "scenarios" / "sweeps" / "conversations.yaml"
ASKS = "conv.haircut-ask-time"
REPLY_TOKENS = 64
"""Replies cut shorter than the prompt config's, only to keep the test to seconds: a reply
that cut is graded like any other (the plumbing is what is checked)."""


def test_the_bundled_conversation_sweep_runs_a_conversation_on_the_bundled_model(
    settings: Settings,
) -> None:
    _needs_llama()
    plan = expand(load_sweep(SWEEP), str(SWEEP))
    assert {spec.model.adapter for spec in plan.trials} == {"local"}
    assert len(plan.trials) >= 30 and plan.sweep.on_turn_failure == "continue"
    [spec] = [s for s in plan.trials if s.scenario.id == ASKS]
    prompt = spec.prompt.model_copy(
        update={
            "generation": spec.prompt.generation.model_copy(update={"max_tokens": REPLY_TOKENS})
        }
    )
    spec = TrialSpec.model_validate(
        spec.model_dump(exclude={"trial_id"}) | {"prompt": prompt.model_dump()}
    )
    result = anyio.run(execute_trial, spec, settings)
    assert result.outcome not in UNGRADED, result.detail
    # `continue`: a failed first turn does not end the conversation, so both are graded.
    assert len(result.turn_results) == len(find_scenario("conversations", ASKS).turns)
    assert all(turn.outcome in OUTCOMES for turn in result.turn_results)
    assert [m.content for m in result.transcript if m.role == "user"][:1] == [
        find_scenario("conversations", ASKS).turns[0].user
    ]
