"""The scorecard's answer quality: fairness and adoption per config, the judge's variance,
and the ranking."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from mcp_farm.schema.scorecard.rows import (
    Frozen,
)

ANCHOR_THRESHOLD = 0.85
"""The seed's anchor gate: Spearman's ρ a judge must reach against the gold scores. A lock may
set a lower one only when written with `--allow-lower-threshold`, and reports say so."""


class AnswerRow(Frozen):
    """Answer quality of one model × prompt × tool set (`config`), or of one scenario in it.
    Fairness and adoption are separate columns and are never combined."""

    dimension: Literal["config", "scenario"]
    model: str
    prompt: str
    """The configuration label: prompt config, `+tool set` when there is one."""
    toolset: str
    baseline: bool
    key: str = ""
    """The scenario id; empty for `config`."""
    n: int
    """Trials scored."""
    scenarios: int
    fairness: float | None
    """Mean of the scenario-level mean fairness (what rankings use)."""
    fairness_low: float | None
    fairness_high: float | None
    """95% interval (Student t over scenario-level means); null with fewer than 2 scenarios."""
    keyword_coverage: float | None
    judge_quality: float | None
    grounding_rate: float | None
    efficiency: float | None
    adoption: float | None
    """Structurally 0 for the baseline."""
    tool_fluency: float | None
    discoverability: float | None
    grounded: int
    unresolved: int
    hallucinated: int
    tokens_reasoning: int | None
    """Summed over the trials that measured them; None, "not measured", where none did (an
    agent whose model calls did not pass the farm)."""
    tokens_tool_io: int
    tokens_verification: int
    estimated: list[str]
    """Token phases whose counts are estimated, not reported by the endpoint."""
    model_s: float | None
    """Mean seconds per trial spent in the model (judging excluded)."""
    judge_s: float | None
    """Mean seconds per trial spent judging."""


class JudgeVariance(Frozen):
    """How much one judge disagrees with itself across duplicate runs."""

    judge: str
    rubric_id: str
    rubric_hash: str
    trials: int
    runs: int
    unreadable: int
    """Criterion scores the judge's replies did not yield."""
    sigma_criterion: float | None
    sigma_step: float | None
    sigma_scenario: float | None
    """Pooled standard deviation across runs at each level (scores normalised to 0..1)."""
    icc1: float | None
    """ICC(1): the share of score variance that is the transcripts, not the judge."""
    resolution: float | None
    """Per scenario: the smallest difference between two scenario-level means the runs can
    resolve, the two-sided 95% threshold of a t-test that estimates σ from the runs,
    t₀.₉₇₅(2R − 2)·√2·σ_scenario/√R; null below R = 2."""
    resolution_80: float | None = None
    """Per scenario: the difference that t-test finds 80% of the time (noncentral t)."""
    noise_floor: float
    """Criterion-level differences below this are noise, never findings."""
    per_criterion: dict[str, float] = Field(default_factory=dict)
    anchors: Literal["verified", "failed", "unverified"] = "unverified"
    """The drift guard for this judge and rubric (`farm anchors verify`): the latest gate run's
    verdict, read when the report is made, not when the card was built."""
    anchor_rho: float | None = None
    anchor_checked_at: datetime | None = None
    """When that gate run was; null when the gate never ran for this judge and rubric."""
    anchor_folder: str | None = None
    """The anchor folder that gate run verified (the latest run of each folder counts: one that
    failed keeps the judge `failed` whatever another folder says; this names it)."""
    anchor_lock: str | None = None
    """SHA256 of that folder's `anchors.lock` as verified."""
    anchor_threshold: float | None = None
    """The ρ that gate run required (the lock's threshold)."""
    anchor_lowered: bool = False
    """True when that threshold was below the seed's 0.85 (allowed only by
    `farm anchors lock --allow-lower-threshold`): every report says so beside the verdict."""


class Ranked(Frozen):
    """One configuration in the answer-quality ranking (scenario-level means only)."""

    model: str
    prompt: str
    toolset: str
    baseline: bool
    fairness: float | None
    adoption: float | None
    vs_baseline: float | None
    """Fairness minus the baseline's on the same model and prompt; null without one."""


class AnswerQuality(Frozen):
    """The answer-quality layer of a scorecard, from one scoring pass."""

    scoring_id: str
    kind: str
    """`run` or `rescore`."""
    grader_version: str
    judge: str
    """The judge model's id; empty when scored without a judge."""
    weights: dict[str, dict[str, float]]
    rows: list[AnswerRow]
    judges: list[JudgeVariance]
    ranking: list[Ranked]
    verified: bool
    """False when the anchor gate has not passed for the judge and rubric used: the ranking is
    unverified."""

    def of(self, dimension: Literal["config", "scenario"]) -> list[AnswerRow]:
        return [r for r in self.rows if r.dimension == dimension]
