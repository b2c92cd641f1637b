"""Sweep files → the list of trials: the matrix models × prompts × scenarios × repetitions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenarios import load_prompt, select
from schema import (
    ModelTarget,
    Scenario,
    ScenarioRef,
    SweepSpec,
    TrialSpec,
    digest,
    load_yaml_model,
    require_unique,
)


@dataclass(frozen=True)
class Plan:
    sweep_id: str
    sweep: SweepSpec
    trials: list[TrialSpec]
    scenario_count: int
    longest_trial_s: float
    """The largest time limit among the picked scenarios."""


def load_sweep(path: Path) -> SweepSpec:
    sweep = load_yaml_model(SweepSpec, path)
    require_unique([m.id for m in sweep.models], str(path), "models", "model")
    return sweep


def with_endpoint(sweep: SweepSpec, endpoint: str, model: str, hardware: str) -> SweepSpec:
    """The same sweep, but served by one OpenAI-compatible endpoint instead of its models."""
    target = ModelTarget(
        id=f"openai-{model}".replace("/", "-"),
        adapter="openai",
        model=model,
        endpoint=endpoint,
        hardware=hardware,
    )
    return sweep.model_copy(update={"models": [target]})


def wordings(sweep: SweepSpec, scenario: Scenario) -> list[tuple[int, int]]:
    """(repetition, variant) pairs of one scenario, per the sweep's `paraphrases` choice."""
    count = 1 + len(scenario.paraphrases)
    reps = range(sweep.repetitions)
    if sweep.paraphrases == "verbatim":
        return [(rep, 0) for rep in reps]
    if sweep.paraphrases == "rotate":
        return [(rep, rep % count) for rep in reps]
    return [(rep, variant) for variant in range(count) for rep in reps]


def expand(sweep: SweepSpec, source: str) -> Plan:
    """Every trial of the sweep, in a stable order, each with its deterministic trial_id."""
    prompts = [load_prompt(pid, source, f"prompts[{i}]") for i, pid in enumerate(sweep.prompts)]
    picked = select(sweep.scenarios, source)
    # The id covers what the sweep resolves to, so editing a prompt config or bumping a
    # scenario version starts a new sweep instead of mixing old and new trials in one scorecard.
    resolved = {
        "sweep": sweep.model_dump(mode="json", exclude={"gates"}),
        "prompts": [p.model_dump(mode="json") for p in prompts],
        "scenarios": [(suite, s.id, s.version) for suite, s in picked],
    }
    sweep_id = f"{sweep.name}-{digest(resolved)[:12]}"
    trials = [
        TrialSpec(
            sweep_id=sweep_id,
            model=model,
            prompt=prompt,
            scenario=ScenarioRef(id=scenario.id, version=scenario.version, suite=suite),
            repetition=rep,
            variant=variant,
            seed=sweep.seed * 1000 + rep,
        )
        for model in sweep.models
        for prompt in prompts
        for suite, scenario in picked
        for rep, variant in wordings(sweep, scenario)
    ]
    return Plan(
        sweep_id=sweep_id,
        sweep=sweep,
        trials=trials,
        scenario_count=len(picked),
        longest_trial_s=max(s.time_limit_s for _suite, s in picked),
    )
