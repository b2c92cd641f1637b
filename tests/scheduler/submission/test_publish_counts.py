"""A submit the broker refuses says how many trials the broker confirmed, not how many were
handed to the client."""

from __future__ import annotations

import pytest

from mcp_farm.scenarios import load_prompt
from mcp_farm.scheduler.submission.publish import publish_trials
from mcp_farm.schema import (
    FarmError,
    ModelTarget,
    ScenarioRef,
    Settings,
    TrialSpec,
)
from mcp_farm.schema.tasks.broker import (
    make_celery,
    queue_for,
)
from tests.helpers import free_port


def _trials(n: int) -> list[tuple[TrialSpec, str]]:
    model = ModelTarget(id="s", adapter="scripted", model="x", script=[])
    scenario = ScenarioRef(id="fs.budget-total", version=1, suite="basic")
    prompt = load_prompt("json")
    return [
        (
            TrialSpec(
                sweep_id="counts",
                model=model,
                prompt=prompt,
                scenario=scenario,
                repetition=r,
                seed=0,
            ),
            queue_for("cpu"),
        )
        for r in range(n)
    ]


def test_a_broker_that_is_not_there_confirmed_none_of_the_trials() -> None:
    app = make_celery(Settings(broker_url=f"redis://127.0.0.1:{free_port()}/0"))
    with pytest.raises(FarmError) as caught:
        publish_trials(app, _trials(20))
    assert "it had confirmed 0 of them" in str(caught.value)
    assert "`farm sweep resume`" in str(caught.value)
