"""A sweep with simulated-user scenarios: the user model rides on their trials only, so
other trials keep their ids, and a sweep without `user_model:` is refused naming it; the
no-user arm runs each card again as a configuration of its own, with no user model; user seeds
at temperature 0 are refused at load, naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.submission.expand import expand, load_sweep
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
    assert with_user == {s.id for s in load_suite("usersim").scenarios}
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


def test_user_seeds_cross_every_repetition_of_a_simulated_user_scenario_with_m_users() -> None:
    crossed = USER.model_copy(update={"seeds": 3})
    plan = expand(sweep(user_model=crossed.model_dump(), repetitions=2), "sweep.yaml")
    dentist = [t for t in plan.trials if t.scenario.id == "usersim.dentist-ask-time"]
    cells = [(t.repetition, t.user_seed, t.seed) for t in dentist]
    # Agent repetition i keeps its sampling seed across the user seeds j: a crossed design.
    assert cells == [(r, j, r) for r in range(2) for j in range(3)]
    assert len({t.trial_id for t in dentist}) == 6
    others = [t for t in plan.trials if t.scenario.suite == "basic"]
    assert others and all(t.user_seed is None and "user_seed" not in t.identity() for t in others)


def test_one_user_seed_leaves_the_payloads_and_ids_as_they_were() -> None:
    plain = expand(sweep(user_model=USER.model_dump()), "sweep.yaml")
    one = expand(sweep(user_model=USER.model_copy(update={"seeds": 1}).model_dump()), "x")
    assert [t.trial_id for t in one.trials] == [t.trial_id for t in plain.trials]
    assert all("user_seed" not in t.identity() for t in plain.trials)
    assert all("seeds" not in (t.identity().get("user") or {}) for t in plain.trials)


def test_both_arms_run_each_card_twice_and_the_no_user_arm_is_a_config_of_its_own() -> None:
    plan = expand(
        sweep(user_model=USER.model_dump(), user_arms=["conversation", "no_user"]), "sweep.yaml"
    )
    cards = {s.id for s in load_suite("usersim").scenarios}
    no_user = [t for t in plan.trials if t.user_arm == "no_user"]
    assert sorted(t.scenario.id for t in no_user) == sorted(cards)
    assert {(t.prompt.id, t.user) for t in no_user} == {("native-nouser", None)}
    live = [t for t in plan.trials if t.scenario.id in cards and t.user_arm is None]
    assert len(live) == len(cards) and all(t.user == USER for t in live)
    # Trials of the conversation arm and of scenarios without a card carry no arm at all.
    assert all("user_arm" not in t.identity() for t in plan.trials if t.user_arm is None)
    assert {t.prompt.id for t in plan.trials if t.scenario.suite == "basic"} == {"native"}


def test_the_no_user_arm_alone_needs_no_user_model() -> None:
    plan = expand(sweep(user_arms=["no_user"]), "sweep.yaml")
    assert all(t.user is None for t in plan.trials)
    assert {t.user_arm for t in plan.trials if t.scenario.suite == "usersim"} == {"no_user"}


def test_user_seeds_at_temperature_zero_are_refused_naming_the_file_and_the_field(
    tmp_path: Path,
) -> None:
    # At temperature 0 the user ignores its seed and the cache keys it out: m seeds would be
    # one user m times, a user variance of 0 by construction.
    spec = sweep(user_model=USER.model_dump()).model_dump(mode="json", exclude_defaults=True)
    spec["user_model"] |= {"temperature": 0.0, "seeds": 4}
    path = tmp_path / "crossed.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_sweep(path)
    said = str(caught.value)
    assert said.startswith(f"{path}: user_model.seeds: 4 user seeds at `temperature: 0`")
    assert "raise `user_model.temperature`" in said and "or set `seeds: 1`" in said
    # Left out, the temperature is 0 too; one seed, or a temperature above 0, loads.
    del spec["user_model"]["temperature"]
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    with pytest.raises(SpecError, match=r"user_model\.seeds: 4 user seeds"):
        load_sweep(path)
    for fix in ({"seeds": 1}, {"temperature": 0.7}):
        path.write_text(yaml.safe_dump(spec | {"user_model": spec["user_model"] | fix}))
        assert load_sweep(path).user_model is not None


def test_the_bundled_sweeps_and_the_variance_benchmark_still_load() -> None:
    from bench.usersim_variance import sweep_of

    root = Path(__file__).resolve().parents[3] / "scenarios" / "sweeps"
    loaded = [load_sweep(path) for path in sorted(root.glob("*.yaml"))]
    assert any(s.user_model is not None for s in loaded)
    crossed = sweep_of(repetitions=8, seeds=8)
    assert crossed.user_model is not None and crossed.user_model.temperature > 0
    assert SweepSpec.model_validate(crossed.model_dump()).user_model == crossed.user_model
