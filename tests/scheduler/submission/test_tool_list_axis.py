"""The tool-list axis in expansion: crossed with the rest, in the label and the trial id."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import get_args

import pytest

from mcp_farm.scheduler.submission.expand import expand, load_sweep
from mcp_farm.schema import SpecError, TrialSpec, digest
from mcp_farm.schema.specs import (
    DESCRIPTION_REWRITES,
    DISTRACTORS_VERSION,
    Descriptions,
    ToolListAxes,
    parse_label,
)

ROBUSTNESS = Path("scenarios/sweeps/robustness.yaml")
QUICKSTART = Path("scenarios/sweeps/quickstart.yaml")


def test_the_bundled_robustness_sweep_crosses_counts_and_descriptions() -> None:
    plan = expand(load_sweep(ROBUSTNESS), str(ROBUSTNESS))
    labels = {t.prompt.id for t in plan.trials}
    assert len(labels) == 8
    assert "native@tools=200,desc=stripped,names=as_is" in labels
    assert len(plan.trials) == 8 * plan.scenario_count
    assert len({t.trial_id for t in plan.trials}) == len(plan.trials)
    for t in plan.trials:
        parsed = parse_label(t.prompt.id)
        assert parsed is not None and parsed == ("native", t.tool_list)


def test_the_level_is_in_the_payload_so_in_the_id_and_the_same_sweep_gives_the_same_ids() -> None:
    first = expand(load_sweep(ROBUSTNESS), str(ROBUSTNESS))
    again = expand(load_sweep(ROBUSTNESS), str(ROBUSTNESS))
    assert [t.trial_id for t in first.trials] == [t.trial_id for t in again.trials]
    assert all("tool_list" in t.identity() for t in first.trials)


def test_a_sweep_without_the_axis_carries_no_level() -> None:
    plan = expand(load_sweep(QUICKSTART), str(QUICKSTART))
    assert all(t.tool_list is None and "tool_list" not in t.identity() for t in plan.trials)
    assert all("@" not in t.prompt.id for t in plan.trials)


def test_the_axis_crosses_with_prompts_and_names() -> None:
    sweep = load_sweep(QUICKSTART)
    axes = ToolListAxes(tool_count=[0, 10], names=["as_is", "scrambled"])
    plan = expand(sweep.model_copy(update={"tool_list": axes}), "x.yaml")
    assert len({t.prompt.id for t in plan.trials}) == 3 * 2 * 2


def test_more_distractors_than_the_catalogue_draws_is_an_error_naming_the_field() -> None:
    sweep = load_sweep(QUICKSTART).model_copy(
        update={"tool_list": ToolListAxes(tool_count=[0, 5000])}
    )
    with pytest.raises(SpecError, match=r"tool_list\.tool_count"):
        expand(sweep, "x.yaml")


def test_a_tool_list_block_is_parsed_strictly() -> None:
    with pytest.raises(ValueError, match="each tool count once"):
        ToolListAxes(tool_count=[10, 10])
    with pytest.raises(ValueError):
        ToolListAxes.model_validate({"tool_count": [0], "colour": "red"})


ZERO_IDS = "f81e023054e5afe75bab7fcbd31b21b1e9e8ad14789e47e79fee09dbba582868"
"""sha256 of the robustness sweep's 24 trial ids at tool count 0, one per line, as they were
before distractors had a version of their own (less the local `native` rendering version,
`tool_rendering`, which changed what these trials show the model, and so their ids)."""


def test_only_levels_with_distractors_carry_their_version_so_other_trials_keep_their_ids() -> None:
    plan = expand(load_sweep(ROBUSTNESS), str(ROBUSTNESS))
    zero = [t for t in plan.trials if t.tool_list is not None and t.tool_list.tool_count == 0]
    more = [t for t in plan.trials if t.tool_list is not None and t.tool_list.tool_count > 0]
    assert len(zero) == 24 and len(more) == 72
    held = [digest({k: v for k, v in t.identity().items() if k != "tool_rendering"}) for t in zero]
    assert hashlib.sha256("\n".join(held).encode()).hexdigest() == ZERO_IDS
    assert all("distractors" not in json.dumps(t.identity()) for t in zero)
    assert all(t.tool_list and t.tool_list.distractors == DISTRACTORS_VERSION for t in more)
    colliding = ToolListAxes(tool_count=[0], names=["colliding"]).levels()[0]
    assert colliding.distractors == DISTRACTORS_VERSION


def test_only_rewritten_descriptions_carry_their_version_so_other_levels_keep_their_ids() -> None:
    sweep = load_sweep(ROBUSTNESS)
    assert sweep.tool_list is not None
    every = sweep.tool_list.model_copy(update={"descriptions": list(get_args(Descriptions))})
    plan = expand(sweep.model_copy(update={"tool_list": every}), str(ROBUSTNESS))
    for t in plan.trials:
        assert t.tool_list is not None
        level = t.tool_list.model_dump(mode="json")
        version = DESCRIPTION_REWRITES.get(t.tool_list.descriptions)
        assert t.tool_list.descriptions_version == version
        assert ("descriptions_version" in level) is (version is not None)
    # The levels that rewrite nothing have the payloads (less the sweep's id, which covers the
    # axes) the bundled sweep gives them.
    plain = {_payload(t) for t in expand(sweep, str(ROBUSTNESS)).trials}
    bundled = [t for t in plan.trials if t.tool_list and t.tool_list.descriptions in BUNDLED]
    assert len(bundled) == len(plain) and {_payload(t) for t in bundled} == plain


def _payload(t: TrialSpec) -> str:
    return digest({k: v for k, v in t.identity().items() if k != "sweep_id"})


BUNDLED = ("as_is", "stripped")
"""The description levels of scenarios/sweeps/robustness.yaml."""
