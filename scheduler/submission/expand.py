"""Sweep files → the list of trials: the matrix models × prompts × scenarios × repetitions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mcp_farm.scenarios import (
    load_prompt,
    load_suite,
    select,
    servers_for,
)
from mcp_farm.schema import (
    LOCAL_TOOL_RENDERING,
    NO_USER_SUFFIX,
    ModelTarget,
    PromptConfig,
    Scenario,
    ScenarioRef,
    SpecError,
    SweepSpec,
    ToolSet,
    TrialSpec,
    UserArm,
    UserModel,
    digest,
    load_yaml_model,
    require_unique,
)
from mcp_farm.schema.specs import ToolListLevel, labelled

DISTRACTOR_LIMIT = 200
"""The most distractors one trial may draw: what the catalogue holds for any scenario, with a
margin (scenarios/servers/distractors/ lists about 250)."""


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


def endpoint_target(
    endpoint: str, model: str, hardware: str = "cpu", api_key_env: str | None = None
) -> ModelTarget:
    """The model `model` at an OpenAI-compatible endpoint, named `openai-<model>`."""
    return ModelTarget(
        id=f"openai-{model}".replace("/", "-"),
        adapter="openai",
        model=model,
        endpoint=endpoint,
        hardware=hardware,
        api_key_env=api_key_env,
    )


def with_endpoint(sweep: SweepSpec, endpoint: str, model: str, hardware: str) -> SweepSpec:
    """The same sweep, but served by one OpenAI-compatible endpoint instead of its models."""
    return sweep.model_copy(update={"models": [endpoint_target(endpoint, model, hardware)]})


def wordings(sweep: SweepSpec, scenario: Scenario) -> list[tuple[int, int]]:
    """(repetition, variant) pairs of one scenario, per the sweep's `paraphrases` choice."""
    count = scenario.wordings
    reps = range(sweep.repetitions)
    if sweep.paraphrases == "verbatim":
        return [(rep, 0) for rep in reps]
    if sweep.paraphrases == "rotate":
        return [(rep, rep % count) for rep in reps]
    return [(rep, variant) for variant in range(count) for rep in reps]


def toolsets_for(sweep: SweepSpec, suite: str, source: str) -> list[ToolSet | None]:
    """The tool sets one suite's scenarios run with: the sweep's, resolved against what the
    suite declares; `[None]` (their own servers) for a suite that declares none."""
    declared = {t.id: t for t in load_suite(suite).toolsets}
    if not sweep.toolsets or not declared:
        return [None]
    known = servers_for(suite)
    picked: list[ToolSet | None] = []
    for i, entry in enumerate(sweep.toolsets):
        if isinstance(entry, str):
            if entry not in declared:
                raise SpecError(
                    source,
                    f"toolsets[{i}]",
                    f"suite {suite!r} declares no tool set {entry!r}; it has "
                    f"{', '.join(sorted(declared))} (or define one inline: {{id, servers}})",
                )
            picked.append(declared[entry])
            continue
        for j, server in enumerate(entry.servers):
            if server not in known:
                raise SpecError(source, f"toolsets[{i}].servers[{j}]", f"unknown server {server!r}")
        picked.append(entry)
    require_unique([t.id for t in picked if t], source, "toolsets", "tool set")
    if sum(t.baseline for t in picked if t) > 1:
        raise SpecError(source, "toolsets", "at most one tool set may be the baseline")
    return picked


def _identity(sweep: SweepSpec) -> dict[str, object]:
    """The sweep as its id sees it: gates and how off-cassette trials count never do; the
    answer-quality fields only when set, so sweeps written before they existed keep their ids."""
    unset = {name for name in SweepSpec.OPTIONAL_AXES if not getattr(sweep, name)}
    return sweep.model_dump(mode="json", exclude={"gates", "left_cassette", *unset})


def user_seeds(sweep: SweepSpec, scenario: Scenario, arm: str | None = None) -> list[int | None]:
    """The user seed indexes one repetition of a scenario runs with: 0..m-1 for a live
    simulated user's trials (a card's conversation arm, not a frozen user) under
    `user_model.seeds: m > 1`; `[None]` otherwise (one trial)."""
    seeds = sweep.user_model.seeds if sweep.user_model else 1
    live = _user_of(sweep, scenario, arm) is not None
    return list(range(seeds)) if live and seeds > 1 else [None]


def _needs_user(sweep: SweepSpec, picked: list[tuple[str, Scenario]], source: str) -> None:
    """A scenario with a live simulated user (not a frozen one) runs its conversation arm
    only in a sweep that names the user's model."""
    if sweep.user_model is not None or "conversation" not in arms_of(sweep):
        return
    for _suite, scenario in picked:
        if scenario.user_sim is not None and scenario.user_sim.frozen is None:
            raise SpecError(
                source,
                "user_model",
                f"scenario {scenario.id} talks to a simulated user: name its model "
                "(`user_model: {model: {id: ..., adapter: local, model: gemma3-270m}}`)",
            )


def arms_of(sweep: SweepSpec) -> list[UserArm]:
    """The arms scenarios with a card run in: the sweep's `user_arms`, or the conversation."""
    return sweep.user_arms or ["conversation"]


def _arms(sweep: SweepSpec, scenario: Scenario) -> list[Literal["no_user"] | None]:
    """The `user_arm` of each trial of a scenario: None (as the scenario says) for any
    scenario without a card and for a card's conversation arm."""
    if scenario.user_sim is None:
        return [None]
    return [None if arm == "conversation" else arm for arm in arms_of(sweep)]


def _user_of(sweep: SweepSpec, scenario: Scenario, arm: str | None) -> UserModel | None:
    """The user model a trial carries: only a live card's conversation arm asks one."""
    live = scenario.user_sim is not None and scenario.user_sim.frozen is None
    return sweep.user_model if live and arm is None else None


def _rendering(model: ModelTarget, prompt: PromptConfig) -> int | None:
    """The version of how the tools are shown, on a `local` model's `native` trials only: the
    other adapters and modes show them as they always did, so their ids stay as they were."""
    return LOCAL_TOOL_RENDERING if model.adapter == "local" and prompt.mode == "native" else None


def _levels(sweep: SweepSpec, source: str) -> list[ToolListLevel | None]:
    """The tool-list levels every trial runs at: `[None]` (the list as served) without a
    `tool_list` block."""
    if sweep.tool_list is None:
        return [None]
    most = max(sweep.tool_list.tool_count)
    if most > DISTRACTOR_LIMIT:
        raise SpecError(
            source,
            "tool_list.tool_count",
            f"{most} distractors asked; the catalogue draws at most {DISTRACTOR_LIMIT} per trial",
        )
    return list(sweep.tool_list.levels())


def _levelled(prompt: PromptConfig, level: ToolListLevel | None) -> PromptConfig:
    """A level's trials carry the prompt under its configuration label (`native@tools=50,…`),
    so every scorecard row, comparison and gate sees each level as a configuration."""
    if level is None:
        return prompt
    return prompt.model_copy(update={"id": labelled(prompt.id, level)})


def _armed(prompt: PromptConfig, arm: str | None) -> PromptConfig:
    """The no-user arm's trials carry the prompt under its id + `-nouser`: a configuration
    of its own in every scorecard, while the agent is told exactly the same."""
    if arm != "no_user":
        return prompt
    return prompt.model_copy(update={"id": prompt.id + NO_USER_SUFFIX})


def expand(sweep: SweepSpec, source: str) -> Plan:
    """Every trial of the sweep, in a stable order, each with its deterministic trial_id."""
    prompts = [load_prompt(pid, source, f"prompts[{i}]") for i, pid in enumerate(sweep.prompts)]
    if sweep.tool_naming is not None:
        prompts = [p.model_copy(update={"tool_naming": sweep.tool_naming}) for p in prompts]
    picked = select(sweep.scenarios, source)
    toolsets = {suite: toolsets_for(sweep, suite, source) for suite, _s in picked}
    if sweep.toolsets and all(sets == [None] for sets in toolsets.values()):
        raise SpecError(
            source, "toolsets", "none of the picked suites declares tool sets (e.g. suite `code`)"
        )
    # The id covers what the sweep resolves to, so editing a prompt config or bumping a
    # scenario version starts a new sweep instead of mixing old and new trials in one scorecard.
    resolved = {
        "sweep": _identity(sweep),
        "prompts": [p.model_dump(mode="json") for p in prompts],
        "scenarios": [(suite, s.id, s.version) for suite, s in picked],
    }
    sweep_id = f"{sweep.name}-{digest(resolved)[:12]}"
    _needs_user(sweep, picked, source)
    levels = _levels(sweep, source)
    trials = [
        TrialSpec(
            sweep_id=sweep_id,
            model=model,
            prompt=_levelled(_armed(prompt, arm), level),
            scenario=ScenarioRef(id=scenario.id, version=scenario.version, suite=suite),
            repetition=rep,
            variant=variant,
            seed=sweep.seed * 1000 + rep,
            toolset=toolset,
            judge=sweep.judge if scenario.answer else None,
            calls=sweep.calls,
            result_chars=sweep.result_chars,
            on_turn_failure=sweep.on_turn_failure if scenario.turns else None,
            confirm_destructive=sweep.confirm_destructive if scenario.turns else None,
            grade_by=sweep.grade_by if scenario.probes else None,
            user=_user_of(sweep, scenario, arm),
            user_seed=user_seed,
            user_arm=arm,
            tool_list=level,
            tool_rendering=_rendering(model, prompt),
        )
        for model in sweep.models
        for prompt in prompts
        for suite, scenario in picked
        for arm in _arms(sweep, scenario)
        for toolset in toolsets[suite]
        for rep, variant in wordings(sweep, scenario)
        for user_seed in user_seeds(sweep, scenario, arm)
        for level in levels
    ]
    return Plan(
        sweep_id=sweep_id,
        sweep=sweep,
        trials=trials,
        scenario_count=len(picked),
        longest_trial_s=max(s.time_limit_s for _suite, s in picked),
    )
