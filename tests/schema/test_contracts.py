from __future__ import annotations

from pathlib import Path

import pytest

from mcp_farm.scenarios import load_prompt
from mcp_farm.schema import (
    ParamMatcher,
    ScenarioRef,
    SpecError,
    SweepSpec,
    TrialSpec,
    load_yaml_model,
    require_unique,
)
from tests.helpers import scripted


def _spec(rep: int = 0) -> TrialSpec:
    return TrialSpec(
        sweep_id="s",
        model=scripted([]),
        prompt=load_prompt("native"),
        scenario=ScenarioRef(id="fs.list-desktop", version=1, suite="basic"),
        repetition=rep,
        seed=rep,
    )


def test_trial_id_is_deterministic_and_depends_on_every_field() -> None:
    assert _spec().trial_id == _spec().trial_id
    assert _spec(0).trial_id != _spec(1).trial_id
    assert len(_spec().trial_id) == 64


def test_trial_payload_round_trips_through_json_with_its_id_checked() -> None:
    spec = _spec()
    again = TrialSpec.model_validate_json(spec.model_dump_json())
    assert again == spec
    tampered = spec.model_dump(mode="json") | {"repetition": 5}
    with pytest.raises(ValueError, match="does not match"):
        TrialSpec.model_validate(tampered)


def test_a_bare_scalar_matcher_means_exact() -> None:
    assert ParamMatcher.model_validate("Desktop").kind == "exact"
    assert ParamMatcher.model_validate({"path": "Desktop"}).kind == "path"


def test_a_matcher_with_two_kinds_is_rejected() -> None:
    with pytest.raises(ValueError, match="exactly one matcher kind"):
        ParamMatcher.model_validate({"regex": "a", "path": "b"})


def test_unknown_field_error_names_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(
        "name: s\nmodels:\n  - id: m\n    adapter: local\n    model: gemma3-270m\n"
        "    colour: red\nprompts: [native]\n"
    )
    with pytest.raises(SpecError) as err:
        load_yaml_model(SweepSpec, path)
    assert str(path) in str(err.value)
    assert "models[0].colour" in str(err.value)


def test_malformed_yaml_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: s\nmodels: [\n")
    with pytest.raises(SpecError, match=r"bad\.yaml: line \d+"):
        load_yaml_model(SweepSpec, path)


def test_unknown_local_model_is_rejected_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="gemma3-270m"):
        SweepSpec.model_validate(
            {
                "name": "s",
                "prompts": ["native"],
                "models": [{"id": "m", "adapter": "local", "model": "gpt-9"}],
            }
        )


def test_a_repeated_id_is_named_by_its_position() -> None:
    require_unique(["a", "b"], "suite.yaml", "scenarios", "scenario")
    with pytest.raises(
        SpecError, match=r"suite\.yaml: scenarios\[2\]\.id: duplicate scenario id 'a'"
    ):
        require_unique(["a", "b", "a"], "suite.yaml", "scenarios", "scenario")


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"from_turn": 0, "from_key": "id"}, "add `derived_from_step`"),
        ({"from_turn": 0}, "add `derived_from_step`"),
        ({"from_regex": "id: (\\d+)"}, "add `derived_from_step`"),
        ({"tolerance": 0.5}, "goes with `number`"),
        ({"extra_keys": "allow"}, "add `keys`"),
    ],
)
def test_a_matcher_with_only_a_modifier_says_which_kind_to_add(
    given: dict[str, object], said: str
) -> None:
    # Issue 43, item 11: `from_turn` without `derived_from_step` got "give exactly one matcher
    # kind ... got none", which names thirteen kinds and not the one missing.
    with pytest.raises(ValueError) as err:
        ParamMatcher.model_validate(given)
    assert said in str(err.value)
    assert "got none" not in str(err.value)
