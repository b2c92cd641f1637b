"""A sweep with simulated-user scenarios: the user model rides on their trials only, so
other trials keep their ids, and a sweep without `user_model:` is refused naming it."""

from __future__ import annotations

import pytest

from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.schema import ScenarioSelection, SpecError, SweepSpec, UserModel
from tests.helpers import scripted

USER = UserModel(model=scripted([{"answer": "###STOP###"}], "user"), temperature=0.3, seed=4)


def sweep(**fields: object) -> SweepSpec:
    return SweepSpec.model_validate(
        {
            "name": "talk",
            "models": [scripted([{"answer": "hi"}]).model_dump()],
            "prompts": ["native"],
            "scenarios": ScenarioSelection(suites=["usersim", "basic"]).model_dump(),
            "repetitions": 1,
        }
        | fields
    )


def test_the_user_model_is_set_on_simulated_user_trials_only() -> None:
    plan = expand(sweep(user_model=USER.model_dump()), "sweep.yaml")
    with_user = {t.scenario.id for t in plan.trials if t.user is not None}
    assert with_user == {
        "usersim.cancel-yoga",
        "usersim.dentist-ask-time",
        "usersim.groceries-ask-item",
        "usersim.landlord-ask-address",
    }
    assert all(t.user == USER for t in plan.trials if t.user is not None)
    # The other trials' payloads are what they were without a user (their ids differ only
    # by the sweep's id, which covers the user model).
    basic = expand(sweep(scenarios={"suites": ["basic"]}), "sweep.yaml")
    payloads = [t.identity() for t in plan.trials if t.scenario.suite == "basic"]
    assert all("user" not in p for p in payloads)
    assert [p | {"sweep_id": ""} for p in payloads] == [
        t.identity() | {"sweep_id": ""} for t in basic.trials
    ]


def test_a_sweep_picking_a_simulated_user_scenario_needs_a_user_model() -> None:
    with pytest.raises(SpecError) as caught:
        expand(sweep(), "sweep.yaml")
    assert str(caught.value).startswith("sweep.yaml: user_model: scenario usersim.")


def test_the_preflight_checks_the_user_model_beside_the_agents() -> None:
    from mcp_farm.scheduler.submission.preflight import targets_of

    with_user = sweep(user_model=USER.model_dump())
    assert [t.id for t in targets_of(with_user, "scripted")] == ["scripted", "user"]
