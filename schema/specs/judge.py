"""The sweep's judge and simulated-user settings, and the grader version they score under."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationInfo, field_validator

from mcp_farm.schema.answer import Weights
from mcp_farm.schema.ids import digest
from mcp_farm.schema.parse.strict import Strict
from mcp_farm.schema.specs.models import ModelTarget

GRADER_VERSION = "7"
"""Bump when the deterministic tool grading or the answer scoring changes meaning."""


class JudgeSettings(Strict):
    """The sweep's answer-quality settings: which model judges, how often, and the weights."""

    model: ModelTarget | None = None
    """The judge: any model target the farm speaks to (openai, local, scripted). None scores
    keywords, grounding, efficiency and adoption without a judge."""
    runs: int = Field(default=2, ge=2)
    """Judge passes per transcript (at least two, so the judge's own variance is measured)."""
    temperature: float = Field(default=0.5, ge=0)
    max_tokens: int = Field(default=384, ge=16)
    rubric: str | None = None
    """Rubric id overriding the suites' and scenarios' own."""
    tolerance: int = Field(default=5, ge=0)
    """Lines a cited symbol may be away from the cited line and still be grounded."""
    noise_floor: float = Field(default=0.05, ge=0)
    """Criterion-level differences smaller than this are reported as noise."""
    token_budget: int = Field(default=8192, ge=1)
    """Tokens (all phases but verification) at which the efficiency's token part reaches 0."""
    weights: Weights = Field(default_factory=Weights)

    def scoring_id(self, kind: str, nonce: str = "") -> str:
        """The id of a scoring pass: what scored (grader version, judge, rubric, weights) and,
        for a rescore, when. Different passes never share rows."""
        return f"{kind}-{digest(self.scoring_config(nonce))[:12]}"

    def scoring_config(self, nonce: str = "") -> dict[str, Any]:
        return {"grader": GRADER_VERSION, "judge": self.model_dump(mode="json"), "nonce": nonce}


class UserModel(Strict):
    """The sweep's simulated user (`user_model:`): the model that plays the user of every
    scenario with a `user_sim` card, with its own sampling (docs/simulated-user.md)."""

    model: ModelTarget
    """Any model target (the bundled `local` model, an `openai` endpoint, `scripted` in tests)."""
    temperature: float = Field(default=0.0, ge=0)
    """The user's sampling temperature (0: the same visible conversation, the same reply)."""
    seed: int = 0
    """The user's base seed. With `seeds: 1` a trial's user seed is this plus its repetition
    (each repetition meets a new user); with `seeds: m > 1` it is this plus the user seed
    index 0..m-1, the same for every repetition (agent repetitions crossed with user seeds)."""
    max_tokens: int = Field(default=160, ge=8)
    """Tokens one user message may take."""
    seeds: int = Field(default=1, ge=1, exclude_if=lambda v: v == 1)
    """User seeds m per agent repetition: each simulated-user scenario runs repetitions ×
    seeds trials, every agent repetition against every user seed, so the scorecard can split
    the pass/fail variance into agent, user and interaction. Left out of the payload at 1, so
    sweeps written before it keep their ids. m ≥ 2 needs a temperature above 0."""

    @field_validator("seeds")
    @classmethod
    def _seeds_need_sampling(cls, seeds: int, info: ValidationInfo) -> int:
        # At temperature 0 the user ignores its seed (and the cache of user turns keys it
        # out), so m seeds would be m copies of one user: a user variance of 0 by construction.
        if seeds > 1 and info.data.get("temperature") == 0:
            raise ValueError(
                f"{seeds} user seeds at `temperature: 0` are one user {seeds} times (a user at "
                "temperature 0 ignores its seed), so the user's share of the variance would be "
                "0 by construction: raise `user_model.temperature` (e.g. 0.7) or set `seeds: 1`"
            )
        return seeds
