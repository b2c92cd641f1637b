"""The answer-quality layer's contracts: tool sets, code repositories, rubrics, judge settings,
and what scoring an answer records (citations, judge scores, the two layers).

Two layers are kept apart on purpose: *fairness* (is the answer better: keywords in the prose,
the judge's quality score, citation grounding, efficiency) and *adoption* (how fluently the
agent used the attached tools). No number here mixes them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mcp_farm.schema.parse.strict import Strict

Grounding = Literal["grounded", "unresolved", "hallucinated"]
"""`grounded`: the file exists at the pinned commit, the line is in range and a named symbol is
within tolerance of it; `unresolved`: no such path; `hallucinated`: the file exists but the line
is past its end or the symbol is further away than the tolerance."""

GROUNDINGS: tuple[Grounding, ...] = ("grounded", "unresolved", "hallucinated")

JudgeSees = Literal["reference", "keywords", "citations"]
"""What a rubric lets the judge see beside the request and the assistant's prose."""

DEFAULT_SEES: tuple[JudgeSees, ...] = ("reference",)

ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"


class ToolSet(Strict):
    """A named list of servers that replaces a scenario's own servers (for scenarios whose suite
    declares tool sets): the fifth axis of a sweep, so competing servers meet the same model and
    scenarios."""

    id: str = Field(pattern=ID_PATTERN)
    servers: list[str] = Field(default_factory=list)
    """Server names from the catalogue or the suite; empty means no MCP server at all."""
    baseline: bool = False
    """The arm the others are measured against; its adoption is structurally zero."""
    description: str = ""


class CodeRepo(Strict):
    """A source tree pinned to one commit: citations in answers are checked against it."""

    fixture: str
    """Folder under scenarios/fixtures holding the tree (committed once, deterministically)."""
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    """The commit SHA that building the fixture must give; a mismatch is an error."""


class Criterion(Strict):
    """One thing the judge scores, on 0..scale."""

    id: str = Field(pattern=ID_PATTERN)
    description: str = Field(min_length=1)
    scale: int = Field(default=4, ge=1, le=10)
    """Scores are integers 0..scale; stored normalised to 0..1 as well."""


class RubricStep(Strict):
    """A group of criteria (the article's "step" level of judge variance)."""

    id: str = Field(pattern=ID_PATTERN)
    description: str = ""
    criteria: list[Criterion] = Field(min_length=1)


class Rubric(Strict):
    """How the judge grades an answer. Lives in scenarios/rubrics/<id>.yaml; its file's sha256
    is recorded with every judgement, so a changed rubric never mixes with the old one."""

    id: str = Field(pattern=ID_PATTERN)
    version: int = Field(ge=1)
    instructions: str = Field(min_length=1)
    """What the judge is told about its task."""
    steps: list[RubricStep] = Field(min_length=1)
    judge_sees: list[JudgeSees] = Field(default_factory=lambda: list(DEFAULT_SEES))
    """Besides the request and the prose: the reference answer, the expected keywords, and/or
    the citations a good answer gives. Tool calls and tool results are never shown."""

    @model_validator(mode="after")
    def _unique_criteria(self) -> Rubric:
        ids = [c.id for s in self.steps for c in s.criteria]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"criterion ids must be unique across steps; repeated: {dupes}")
        return self

    @property
    def criteria(self) -> list[tuple[str, Criterion]]:
        """(step id, criterion) for every criterion, in order."""
        return [(s.id, c) for s in self.steps for c in s.criteria]


class AnswerSpec(Strict):
    """What a good answer to a scenario contains (scored on the assistant's prose only)."""

    keywords: list[str] = Field(default_factory=list)
    """Terms a complete answer mentions (case-insensitive; `a|b` accepts either)."""
    citations: list[str] = Field(default_factory=list)
    """Locations a good answer cites, as `path:line` or `path:start-end` (shown to the judge
    when the rubric allows it; used by self-checks)."""
    reference: str = ""
    """A reference answer, in prose (shown to the judge when the rubric allows it)."""
    rubric: str | None = None
    """Rubric id under scenarios/rubrics; default: the suite's."""


class FairnessWeights(Strict):
    keywords: float = Field(default=0.10, ge=0)
    judge: float = Field(default=0.55, ge=0)
    grounding: float = Field(default=0.15, ge=0)
    efficiency: float = Field(default=0.20, ge=0)


class AdoptionWeights(Strict):
    fluency: float = Field(default=0.60, ge=0)
    discoverability: float = Field(default=0.40, ge=0)


class Weights(Strict):
    """Weights inside each layer (the article's defaults). The layers are never combined."""

    fairness: FairnessWeights = Field(default_factory=FairnessWeights)
    adoption: AdoptionWeights = Field(default_factory=AdoptionWeights)


class Citation(BaseModel):
    """One reference the answer makes, and what checking it at the pinned commit found."""

    model_config = ConfigDict(extra="forbid")

    text: str
    """As written in the answer."""
    path: str
    line_start: int | None = None
    line_end: int | None = None
    symbol: str | None = None
    status: Grounding
    detail: str = ""


class JudgeScore(BaseModel):
    """One criterion of one judge run."""

    model_config = ConfigDict(extra="forbid")

    run: int
    step: str
    criterion: str
    score: float | None
    """0..scale as the judge gave it; None when the judge's reply could not be read."""
    normalized: float | None
    rationale: str = ""


class AnswerScore(BaseModel):
    """The answer-quality record of one trial under one scoring (grader + judge + rubric)."""

    model_config = ConfigDict(extra="forbid")

    version: int = 1
    trial_id: str
    sweep_id: str
    scoring_id: str
    """Digest of what produced it (grader version, judge, rubric hash, weights): rescoring with
    anything different writes new rows beside the old ones."""
    toolset: str = ""
    baseline: bool = False
    outcome: str
    """The deterministic tool-calling grade (re-graded when rescoring)."""
    keyword_coverage: float | None
    citations: list[Citation] = Field(default_factory=list)
    grounding_rate: float | None
    """grounded / all citations; None when the answer cites nothing."""
    judge_quality: float | None
    """Mean normalised judge score over runs and criteria; None without a judge."""
    efficiency: float
    fairness: float
    tool_fluency: float | None
    """Share of the agent's calls that were well-formed and succeeded; None for the baseline."""
    discoverability: float | None
    """1 when the agent used a tool of the attached servers successfully, else 0."""
    adoption: float
    """Structurally 0 for the baseline arm."""
    tokens_reasoning: int | None = 0
    """The trial's completion tokens; None, "not measured", where its agent's model calls did
    not pass the farm (never 0)."""
    tokens_tool_io: int = 0
    tokens_verification: int = 0
    estimated: list[str] = Field(default_factory=list)
    """Token phases whose count is estimated (characters / 4) rather than reported."""
    judge_model: str = ""
    judge_pins: dict[str, str] = Field(default_factory=dict)
    rubric_id: str = ""
    rubric_hash: str = ""
    judge_s: float = 0.0
    """Seconds spent judging (kept apart from the model's time)."""
    judgements: list[JudgeScore] = Field(default_factory=list)
