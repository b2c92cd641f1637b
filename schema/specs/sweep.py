"""The matrix a user asks for: the sweep, its scenario selection and its gates."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from mcp_farm.schema.answer import ToolSet
from mcp_farm.schema.expect import GradeBy
from mcp_farm.schema.parse.strict import Strict
from mcp_farm.schema.specs.judge import JudgeSettings, UserModel
from mcp_farm.schema.specs.models import ModelTarget
from mcp_farm.schema.specs.prompts import ToolNaming
from mcp_farm.schema.specs.toollist import ToolListAxes
from mcp_farm.schema.specs.turn import CallCounting, OnTurnFailure
from mcp_farm.schema.usercard import UserArm
from mcp_farm.schema.vocab import Tier


class ScenarioSelection(Strict):
    suites: list[str] = Field(default_factory=lambda: ["basic"])
    """Suite names under scenarios/suites, or paths to suite files."""
    tiers: list[Tier] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    ids: list[str] = Field(default_factory=list)


CONVERSATION_METRICS = ("conversation_pass_rate", "turn_pass_rate")
"""Gate metrics read from a scorecard's conversation block, kept per config."""


class Gate(Strict):
    """A threshold `farm report --gate` enforces, on every scorecard row of one kind."""

    metric: Literal[
        "pass_rate",
        "first_try_rate",
        "pass_low",
        "pass_hat_k",
        "pass_at_k",
        "p50_s",
        "p95_s",
        "p99_s",
        "recovery_rate",
        "conversation_pass_rate",
        "turn_pass_rate",
        "tool_count_slope",
        "tool_count_drop",
    ]
    """`pass_low` is the lower end of the pass rate's 95% interval; `first_try_rate` the pass
    rate counting only passes with no wrong or repeated call; `p95_s` etc. latency;
    `recovery_rate` the share of trials with a failed call that recovered (a row where no call
    failed is not checked); `conversation_pass_rate` and `turn_pass_rate` the conversations'
    rates, `per: config` only (a config without conversations is not checked);
    `tool_count_slope` each tool-list curve's slope (log-odds per doubling of the list; a `min`
    such as -0.5) and `tool_count_drop` its pass rate at the fewest tools minus that at the
    tool count `only` names (the most tools without it; a `max` such as 0.2), `per: config`
    only (docs/robustness.md)."""
    per: Literal["config", "tool", "tier", "scenario", "phrasing"] = "config"
    """Which rows: per model × prompt (`config`), or per tool, tier, scenario, wording."""
    min: float | None = None
    max: float | None = None
    only: str | None = None
    """Only rows whose tool / tier / scenario / wording is this one."""

    @model_validator(mode="after")
    def _one_bound(self) -> Gate:
        if (self.min is None) == (self.max is None):
            raise ValueError("give exactly one of `min` and `max`")
        if self.metric in CONVERSATION_METRICS and self.per != "config":
            raise ValueError(f"`{self.metric}` is kept per config only: use `per: config`")
        if self.metric.startswith("tool_count_") and self.per != "config":
            raise ValueError(f"`{self.metric}` is kept per tool-list curve: use `per: config`")
        if self.metric == "tool_count_drop" and self.only is not None and not self.only.isdigit():
            raise ValueError("`only` of `tool_count_drop` is a tool count, e.g. '50'")
        return self

    def rule_text(self) -> str:
        bound = f">= {self.min:g}" if self.min is not None else f"<= {self.max:g}"
        scope = f" {self.per}={self.only}" if self.only else f" per {self.per}"
        return f"{self.metric} {bound}{scope}"


class SweepSpec(Strict):
    """The matrix a user asks for: models × prompt configs × scenarios × repetitions."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    models: list[ModelTarget] = Field(min_length=1)
    prompts: list[str] = Field(min_length=1)
    """Prompt configuration ids from scenarios/prompts."""
    scenarios: ScenarioSelection = Field(default_factory=ScenarioSelection)
    repetitions: int = Field(default=10, ge=1)
    paraphrases: Literal["verbatim", "rotate", "all"] = "rotate"
    """Which wording each trial uses: `verbatim` only the scenario's prompt; `rotate` cycles
    prompt, paraphrase 1, paraphrase 2, … over the repetitions; `all` runs every repetition
    once per wording (multiplies the trials)."""
    seed: int = 0
    """Base seed; each trial's sampling seed derives from it and its repetition index."""
    gates: list[Gate] = Field(default_factory=list)
    """Thresholds for `farm report --gate` (not part of the sweep id: tightening a gate does
    not start a new sweep)."""
    toolsets: list[str | ToolSet] = Field(default_factory=list)
    """The tool-set axis: ids of tool sets the picked suites declare, or inline tool sets
    (`{id, servers, baseline}`). Scenarios of suites that declare tool sets run once per tool
    set; other scenarios run once with their own servers."""
    judge: JudgeSettings | None = None
    """Answer-quality scoring: the judge model, its runs, the rubric, weights, tolerance."""
    calls: CallCounting | None = None
    """Overrides every scenario's `calls` (docs/writing-scenarios.md, "Strict call counts"); left out: their own."""
    result_chars: int | None = Field(default=None, ge=1)
    """Overrides every server's `result_chars` (characters of a result the model is shown)."""
    tool_naming: ToolNaming | None = None
    """Overrides the prompt configs' `tool_naming` (`server_prefixed` shows tools as
    server__tool), so a name clash is fixed without a new prompt file."""
    left_cassette: Literal["count", "exclude"] = "count"
    """Trials that called a replayed server (`replay:`) off its cassette: `count` grades them
    like any trial; `exclude` leaves them out of every rate, outcome count and latency of the
    scorecard and `farm compare` (the scorecard shows how many there were either way). Not
    part of the sweep id, like `gates`: it changes how trials are counted, not which run."""

    on_turn_failure: OnTurnFailure | None = None
    """Overrides every conversation's `on_turn_failure`; left out: each scenario's own."""
    grade_by: GradeBy | None = None
    """Overrides every scenario's `grade_by` where the scenario has `state:` probes (one
    without probes is graded by its calls); left out: each scenario's own (docs/state.md)."""
    confirm_destructive: bool | None = None
    """Overrides every conversation's `confirm_destructive` (`true`: a destructive tool only
    after the user confirmed, so a whole sweep can measure it); left out: each scenario's own."""
    user_model: UserModel | None = None
    """The simulated user of the scenarios with a `user_sim` card; a sweep that picks such a
    scenario (other than a frozen one) for the `conversation` arm needs it."""
    tool_list: ToolListAxes | None = None
    """The tool list as an axis (docs/robustness.md): distractor counts, description and name
    levels, crossed; each level is a configuration of its own (prompt id + `@level`)."""
    user_arms: list[UserArm] = Field(default_factory=list)
    """How scenarios with a card run: `conversation` (with the simulated user), `no_user`
    (every fact in the opening, no user; prompt id + `-nouser`), or both; left out: only
    `conversation`."""

    OPTIONAL_AXES: ClassVar[tuple[str, ...]] = (
        "toolsets",
        "judge",
        "calls",
        "result_chars",
        "tool_naming",
        "on_turn_failure",
        "grade_by",
        "confirm_destructive",
        "user_model",
        "user_arms",
        "tool_list",
    )
    """Fields left out of the sweep's id while unset, so sweeps written before they existed
    keep their ids."""

    @field_validator("user_arms")
    @classmethod
    def _arms_once(cls, arms: list[UserArm]) -> list[UserArm]:
        if len(set(arms)) < len(arms):
            raise ValueError("name each arm once (`conversation`, `no_user`)")
        return arms
