"""The simulated user's part of a trial, on the explorer's trial page and in `farm trial
show`: who played the user, how the conversation ended, whose fault the failure was, and each
user error with the user's own words, escaped."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from mcp_farm.scheduler.view.queries import trial_record
from mcp_farm.scheduler.view.terminal import print_trial
from mcp_farm.scheduler.view.trial_page import trial_page
from mcp_farm.schema import ScenarioSelection, Settings, SweepSpec, UserModel
from tests.helpers import run_sweep_embedded, scripted

pytestmark = pytest.mark.integration

PAYLOAD = "<script>alert(1)</script>"


def test_a_user_that_left_early_is_shown_with_its_words_and_whose_fault(
    settings: Settings,
) -> None:
    sweep = SweepSpec(
        name="early",
        models=[scripted([{"answer": "What time does it start?"}], "asking-agent")],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=["usersim"], ids=["usersim.dentist-ask-time"]),
        repetitions=1,
        user_model=UserModel(
            model=scripted([{"answer": f"Never mind {PAYLOAD} ###STOP###"}], "leaving-user"),
            temperature=0.0,
        ),
    )
    engine, plan = run_sweep_embedded(sweep, settings)
    [trial_id] = [spec.trial_id for spec in plan.trials]
    record = trial_record(engine=engine, trial_id=trial_id)
    assert record is not None

    page = trial_page(record)
    assert "<h2>Simulated user</h2>" in page and "whose fault: user" in page
    assert "left early (stopped at the agent&#x27;s question)" in page
    assert PAYLOAD not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "ended by user_stop" in page and "leaving-user t=0 max_tokens=160 guideline v1" in page

    out = io.StringIO()
    print_trial(record, Console(file=out, width=200))
    shown = out.getvalue()
    assert "simulated user:" in shown and "whose fault: user" in shown
    assert "user error, message 1: left early (stopped at the agent's question): " in shown
    assert f"Never mind {PAYLOAD}" in shown  # plain text in a terminal, never markup
