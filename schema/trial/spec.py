"""The Celery payload: one trial (TrialSpec), the only thing a worker receives, and its id."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp_farm.schema.answer import (
    ToolSet,
)
from mcp_farm.schema.expect import GradeBy
from mcp_farm.schema.ids import digest
from mcp_farm.schema.specs import (
    CallCounting,
    JudgeSettings,
    ModelTarget,
    OnTurnFailure,
    PromptConfig,
    ToolListLevel,
    UserModel,
)


class ScenarioRef(BaseModel):
    """A scenario by id and version, and the suite it lives in."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    version: int
    suite: str


class TrialSpec(BaseModel):
    """One trial: the only payload a worker receives. JSON in, JSON out."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = 1
    """Payload format version."""
    sweep_id: str
    model: ModelTarget
    prompt: PromptConfig
    scenario: ScenarioRef
    repetition: int = Field(ge=0)
    variant: int = Field(default=0, ge=0)
    """Which wording of the request: 0 the scenario's prompt, k its k-th paraphrase."""
    seed: int
    """Sampling seed for this repetition."""
    toolset: ToolSet | None = None
    """The tool set replacing the scenario's own servers; None: the scenario's servers."""
    judge: JudgeSettings | None = None
    """Answer-quality scoring for scenarios with an `answer`; None: no answer scoring."""
    calls: CallCounting | None = Field(default=None, exclude_if=lambda v: v is None)
    """The sweep's override of the scenario's `calls`; None: the scenario's own. Left out of
    the payload when unset, as `result_chars` is, so older payloads and ids stay as they were."""
    result_chars: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """The sweep's override of the servers' `result_chars`; None: each server's own."""
    on_turn_failure: OnTurnFailure | None = Field(default=None, exclude_if=lambda v: v is None)
    """The sweep's override of a conversation's `on_turn_failure`; None: the scenario's own.
    Set only on conversations' trials, and left out when unset, so other ids stay as they were."""
    confirm_destructive: bool | None = Field(default=None, exclude_if=lambda v: v is None)
    """The sweep's `confirm_destructive: true`, on conversations' trials only; None: the
    scenario's own. Left out when unset, so other ids stay as they were."""
    grade_by: GradeBy | None = Field(default=None, exclude_if=lambda v: v is None)
    """The sweep's `grade_by`, on the trials of scenarios with `state:` probes only; None: the
    scenario's own. Left out when unset, so other ids stay as they were."""
    user: UserModel | None = Field(default=None, exclude_if=lambda v: v is None)
    """The sweep's simulated user, on the trials of scenarios with a `user_sim` card only;
    left out when unset, so other trials keep their ids."""
    user_seed: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """The user seed index (0..m-1) of a simulated-user trial in a sweep with `user_model.seeds:
    m > 1`; None otherwise (the user seed follows the repetition), and then left out, so
    other trials keep their ids."""
    user_arm: Literal["no_user"] | None = Field(default=None, exclude_if=lambda v: v is None)
    """`no_user`: a scenario with a card run with no user, every fact of the card in the
    opening (the sweep's `user_arms`); None: as the scenario says. Left out when unset."""
    tool_list: ToolListLevel | None = Field(default=None, exclude_if=lambda v: v is None)
    """The trial's tool-list level (distractors, descriptions, names; the sweep's `tool_list`);
    None: the servers' own list as listed. Left out when unset, so other trials keep their ids."""
    tool_rendering: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """LOCAL_TOOL_RENDERING on the trials of a `local` model in `native` mode (how the tools are
    shown to it); None, and left out, on every other trial, so their ids stay as they were."""
    trial_id: str = ""
    """sha256 of the canonical JSON of everything above; filled in when empty, checked when not."""

    @model_validator(mode="after")
    def _fill_or_check_id(self) -> TrialSpec:
        expected = digest(self.identity())
        if not self.trial_id:
            object.__setattr__(self, "trial_id", expected)
        elif self.trial_id != expected:
            raise ValueError(f"trial_id {self.trial_id[:12]} does not match its payload")
        return self

    def identity(self) -> dict[str, Any]:
        """What the trial id is the digest of. The optional fields are left out when unset, so
        trials of sweeps without them keep the ids they always had."""
        unset = {name for name in ("toolset", "judge") if getattr(self, name) is None}
        return self.model_dump(mode="json", exclude={"trial_id", *unset})

    @property
    def toolset_id(self) -> str:
        return self.toolset.id if self.toolset else ""
