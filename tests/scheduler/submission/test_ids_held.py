"""The bundled sweeps expand to the very trial ids they always had: conversations (and any
later optional field) leave one-prompt scenarios' ids alone. Only what changes what a model is
shown changes an id: the tools written into a `local` model's `native` prompt
(`tool_rendering`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from mcp_farm.scheduler.submission.expand import expand, load_sweep
from mcp_farm.schema import ModelTarget, digest

HELD = {
    # sweep file: (sweep id, trials, sha256 of the trial ids one per line, in expansion order)
    "code.yaml": (
        "code-answers-c2463fb006be",
        18,
        "79a1d50cb5efcb937692914abdbe8d244a29b62391a79227408961a1d185798a",
    ),
    "full-suite.yaml": (
        "full-suite-4cae12dd7160",
        92,
        "75521d274c46e9defedf036b3209f19754d471eeb1ba1e2f7adbab90fff9dac0",
    ),
    "quickstart.yaml": (
        "quickstart-083db5d0abd9",
        36,
        "56898cbe8587e454bac63149d309764197f4a7dfe132f26d20c3b584f7f6d688",
    ),
    "two-local-models.yaml": (
        "two-local-models-0dee2f83bfc1",
        144,
        "2112b49da78059066e44f5842eafef6ea47af43e8375824266cbc7ef7a5aad2c",
    ),
}

BEFORE_RENDERING = {
    # the same hash, of the ids the trials had before `tool_rendering` (its key left out)
    "code.yaml": "3cc008ba3f45c87df36046d292840de1f5538c11d1fca7bea5d754a2a9403774",
    "full-suite.yaml": "e63467a9d3bf4efab2d61729807e6e1fa9be7b4e3ad05f743b6f9f7bc8126b63",
    "quickstart.yaml": "e545a6c8fdaf63c36f48c0ed5e0b4dd324e46ccd467d4dec6f1edb127943b772",
    "two-local-models.yaml": "df2502645f475ed6099e13c7fc29f8853623a03685dbb1e0ba68bbbd756065c1",
}


@pytest.mark.parametrize("name", sorted(HELD))
def test_a_bundled_sweep_expands_to_the_trial_ids_it_always_had(name: str) -> None:
    path = Path("scenarios/sweeps") / name
    plan = expand(load_sweep(path), str(path))
    ids = "\n".join(t.trial_id for t in plan.trials)
    held = (plan.sweep_id, len(plan.trials), hashlib.sha256(ids.encode()).hexdigest())
    assert held == HELD[name]


@pytest.mark.parametrize("name", sorted(BEFORE_RENDERING))
def test_only_local_native_trials_changed_their_ids_and_only_by_the_rendering_version(
    name: str,
) -> None:
    path = Path("scenarios/sweeps") / name
    trials = expand(load_sweep(path), str(path)).trials
    before = [
        digest({k: v for k, v in t.identity().items() if k != "tool_rendering"}) for t in trials
    ]
    ids = "\n".join(before)
    assert hashlib.sha256(ids.encode()).hexdigest() == BEFORE_RENDERING[name]
    for t, old in zip(trials, before, strict=True):
        native_local = t.model.adapter == "local" and t.prompt.mode == "native"
        assert (t.trial_id != old) is native_local
        assert ("tool_rendering" in t.identity()) is native_local


def test_a_sweeps_on_turn_failure_reaches_only_conversation_trials() -> None:
    path = Path("scenarios/sweeps/quickstart.yaml")
    plain = load_sweep(path)
    both = plain.scenarios.model_copy(update={"suites": ["basic", "conversations"]})
    without = expand(plain.model_copy(update={"scenarios": both}), str(path))
    sweep = plain.model_copy(update={"scenarios": both, "on_turn_failure": "continue"})
    trials = expand(sweep, str(path)).trials
    talks = [t for t in trials if t.scenario.suite == "conversations"]
    others = [t for t in trials if t.scenario.suite != "conversations"]
    assert talks and all(t.on_turn_failure == "continue" for t in talks)
    assert all(t.on_turn_failure is None for t in others)
    # Left out of a one-prompt trial's payload, as it is of every trial of a sweep without it.
    assert all("on_turn_failure" not in t.identity() for t in [*others, *without.trials])


def test_a_native_trial_on_any_other_adapter_carries_no_rendering_version() -> None:
    path = Path("scenarios/sweeps/quickstart.yaml")
    sweep = load_sweep(path)
    endpoint = ModelTarget(
        id="qwen", adapter="openai", endpoint="http://127.0.0.1:8080/v1", model="qwen3-4b"
    )
    trials = expand(sweep.model_copy(update={"models": [endpoint]}), str(path)).trials
    assert any(t.prompt.mode == "native" for t in trials)
    assert all(t.tool_rendering is None and "tool_rendering" not in t.identity() for t in trials)
