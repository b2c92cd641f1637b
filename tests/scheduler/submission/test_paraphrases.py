"""Paraphrased prompts: how a sweep spreads them over repetitions, and what the model sees."""

from __future__ import annotations

import anyio
import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.schema import (
    ModelTarget,
    ScenarioSelection,
    Settings,
    SweepSpec,
)
from mcp_farm.workers.trial import execute_trial
from tests.helpers import (
    ideal_script,
    trial,
)

SCENARIO = load_suite("basic").scenarios[0]


def _sweep(paraphrases: str, repetitions: int = 4) -> SweepSpec:
    return SweepSpec(
        name="p",
        models=[ModelTarget(id="m", adapter="scripted", model="s", script=[])],
        prompts=["native"],
        scenarios=ScenarioSelection(ids=[SCENARIO.id]),
        repetitions=repetitions,
        paraphrases=paraphrases,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("mode", "variants"),
    [("verbatim", [0, 0, 0, 0]), ("rotate", [0, 1, 2, 0]), ("all", [0] * 4 + [1] * 4 + [2] * 4)],
)
def test_each_mode_gives_the_wordings_it_promises(mode: str, variants: list[int]) -> None:
    assert len(SCENARIO.paraphrases) == 2
    plan = expand(_sweep(mode), "test")
    assert [t.variant for t in plan.trials] == variants
    assert len({t.trial_id for t in plan.trials}) == len(variants)


def test_gates_do_not_change_the_sweep_id() -> None:
    plain = _sweep("rotate")
    gated = SweepSpec.model_validate(
        plain.model_dump() | {"gates": [{"metric": "pass_rate", "min": 0.9}]}
    )
    assert gated.gates
    assert expand(plain, "a").sweep_id == expand(gated, "b").sweep_id


def test_the_model_is_asked_the_paraphrase_and_the_trial_records_it(settings: Settings) -> None:
    spec = trial(SCENARIO, ideal_script(SCENARIO)).model_copy(update={"variant": 2})
    result = anyio.run(execute_trial, spec, settings)
    asked = next(m.content for m in result.transcript if m.role == "user")
    assert asked == SCENARIO.paraphrases[1] and result.variant == 2
    assert result.outcome == "pass"


def test_a_variant_the_scenario_does_not_have_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="has 2 paraphrase"):
        SCENARIO.prompt_for(3)


def test_a_sweep_may_set_tool_naming_calls_and_result_chars_without_changing_other_ids() -> None:
    plain = expand(_sweep("verbatim", 1), "t")
    tuned = expand(
        _sweep("verbatim", 1).model_copy(
            update={"tool_naming": "server_prefixed", "calls": "strict", "result_chars": 900}
        ),
        "t",
    )
    spec = tuned.trials[0]
    assert spec.prompt.tool_naming == "server_prefixed" and spec.prompt.id == "native"
    assert (spec.calls, spec.result_chars) == ("strict", 900)
    assert tuned.sweep_id != plain.sweep_id
    # Unset, they are not in the payload at all, so earlier trial ids stay as they were.
    assert (
        "calls" not in plain.trials[0].model_dump()
        and "result_chars" not in plain.trials[0].model_dump()
    )
