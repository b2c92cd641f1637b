"""The new expectation forms are checked when a suite loads: bad shapes name file and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_farm.scenarios import load_suite
from mcp_farm.scenarios.validate import check_file
from mcp_farm.schema import (
    ExpectedCall,
    ParamMatcher,
    SpecError,
)


def suite_file(tmp_path: Path, *steps: dict[str, Any]) -> Path:
    path = tmp_path / "mine.yaml"
    scenario = {
        "id": "t.one",
        "version": 1,
        "tier": "simple",
        "prompt": "p",
        "servers": ["gaia"],
        "expect": list(steps),
    }
    path.write_text(yaml.safe_dump({"suite": "mine", "scenarios": [scenario]}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("steps", "field", "problem"),
    [
        (
            [{"tool": "t", "params": {"p": {"items": [{"keys": {"k": {"regex": "(["}}}]}}}],
            "scenarios[0].expect[0].params.p.items[0].keys.k.regex",
            "invalid regular expression",
        ),
        (
            [{"tool": "t", "params": {"p": {"contains": {"json_schema": {"type": 12}}}}}],
            "scenarios[0].expect[0].params.p.contains.json_schema",
            "invalid JSON schema",
        ),
        (
            [{"tool": "t", "params": {"p": {"items": {"optional": 1}}}}],
            "scenarios[0].expect[0].params.p",
            "`optional` inside `items`",
        ),
        (
            [{"tool": "t", "params": {"p": {"regex": "a", "extra_keys": "allow"}}}],
            "scenarios[0].expect[0].params.p",
            "`extra_keys` only goes with `keys`",
        ),
        (
            [{"tool": "t", "params": {"p": {"keys": {}, "extra_keys": "some"}}}],
            "scenarios[0].expect[0].params.p.extra_keys",
            "'forbid' or 'allow'",
        ),
        (
            [{"tool": "t", "params": {"p": {"items": 1, "keys": {}}}}],
            "scenarios[0].expect[0].params.p",
            "only items and contains go together",
        ),
        (
            [{"tool": {"one_of": ["a", "a"]}}],
            "scenarios[0].expect[0].tool.one_of",
            "names a tool twice",
        ),
        (
            [{"tool": {"one_of": ["a"]}}],
            "scenarios[0].expect[0].tool.one_of",
            "at least 2",
        ),
        (
            [{"tool": {"any_of": ["a", "b"]}}],
            "scenarios[0].expect[0].tool.one_of",
            "Field required",
        ),
        (
            [{"tool": "a"}, {"tool": "b", "after": [1]}],
            "scenarios[0].expect[1].after[0]",
            "must name an earlier step (0..0), got 1",
        ),
        (
            [{"tool": "a"}, {"tool": "b"}, {"tool": "c", "after": [0, 0]}],
            "scenarios[0].expect[2].after[1]",
            "names step 0 twice",
        ),
        (
            [{"tool": "a", "after": [0]}],
            "scenarios[0].expect[0].after[0]",
            "the first step follows no other",
        ),
        (
            [{"tool": "a"}, {"tool": "b", "params": {"p": {"items": {"derived_from_step": 1}}}}],
            "scenarios[0].expect[1].params.p.items.derived_from_step",
            "must name an earlier step (0..0), got 1",
        ),
        (
            [
                {"tool": "a"},
                {
                    "tool": "b",
                    "params": {"p": {"keys": {"k": {"optional": {"derived_from_step": 3}}}}},
                },
            ],
            "scenarios[0].expect[1].params.p.keys.k.optional.derived_from_step",
            "must name an earlier step",
        ),
        (
            [{"tool": "a", "expect_error": "sometimes"}],
            "scenarios[0].expect[0].expect_error",
            "boolean",
        ),
    ],
)
def test_a_bad_expectation_stops_the_load_naming_file_and_field(
    tmp_path: Path, steps: list[dict[str, Any]], field: str, problem: str
) -> None:
    path = suite_file(tmp_path, *steps)
    with pytest.raises(SpecError) as caught:
        load_suite(str(path))
    assert caught.value.source == str(path)
    assert caught.value.field == field
    assert problem in caught.value.problem
    _suite, problems = check_file(path)
    assert any(p.field == field and problem in p.problem for p in problems), problems


def test_every_new_form_loads_and_keeps_its_shape() -> None:
    step = ExpectedCall.model_validate(
        {
            "tool": {"one_of": ["read_text_file", "read_file"]},
            "after": [],
            "expect_error": False,
            "params": {
                "edits": {
                    "items": [{"keys": {"oldText": {"regex": ".*"}, "dry": {"optional": False}}}],
                    "contains": [{"any": True}],
                },
                "who": {"contains": {"derived_from_step": 0}},
                "flag": {"optional": None},
            },
        }
    )
    assert step.names == ("read_text_file", "read_file")
    assert step.label == "read_text_file|read_file"
    assert step.sources() == {0}
    edits = step.params["edits"]
    assert edits.kinds == ("items", "contains")
    assert isinstance(edits.items, list) and edits.items[0].keys is not None
    assert step.params["flag"].optional == ParamMatcher.model_validate({"exact": None})
    again = ExpectedCall.model_validate(step.model_dump(exclude_unset=True))
    assert again == step


def test_an_omitted_after_means_the_scenarios_order() -> None:
    plain = ExpectedCall.model_validate({"tool": "t"})
    assert plain.requires(2, "ordered") == [1]
    assert plain.requires(0, "ordered") == []
    assert plain.requires(2, "unordered") == []
    free = ExpectedCall.model_validate({"tool": "t", "after": []})
    assert free.requires(2, "ordered") == []
