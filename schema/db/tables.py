"""Database tables. JSON-valued columns are stored as text so SQLite and Postgres agree."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, false, true
from sqlmodel import Field, SQLModel


class SweepRow(SQLModel, table=True):
    """One submitted sweep."""

    __tablename__ = "sweep"

    sweep_id: str = Field(primary_key=True)
    name: str
    spec_json: str
    """The SweepSpec as submitted."""
    trial_count: int
    created_at: datetime
    status: str = "active"
    """`active`, or `cancelled` by `farm sweep cancel` (trials not yet run are skipped)."""


BROWSE_ORDER = ("model_id", "prompt_id", "toolset", "scenario_id", "repetition", "variant")
"""Scenario order: how the trial explorer lists a sweep's trials by default."""
FILTER_INDEXES_BY_MIGRATION = {
    22: (
        ("ix_trial_browse_tier", "tier"),
        ("ix_trial_browse_variant", "variant"),
        ("ix_trial_browse_first_try", "first_try"),
        ("ix_trial_browse_route", "route"),
        ("ix_trial_browse_cassette", "left_cassette"),
    ),
    23: (("ix_trial_browse_other_path", "other_path"),),
}
"""Per migration that made them, (index, column): the explorer's filters on a column of their
own (scheduler/view/queries/where.py)."""
FILTER_INDEXES = tuple(pair for pairs in FILTER_INDEXES_BY_MIGRATION.values() for pair in pairs)
"""Every (index, column) of FILTER_INDEXES_BY_MIGRATION."""


class TrialRow(SQLModel, table=True):
    """One trial: inserted `pending` at submission, upserted by the worker that runs it."""

    __tablename__ = "trial"
    __table_args__ = (
        Index("ix_trial_sweep_status", "sweep_id", "status"),
        # The trial explorer's pages (scheduler/view): a sweep's trials in scenario order, with
        # or without one outcome, by latency, one scenario across configurations (migration 12),
        # and newest first (migration 20).
        Index(
            "ix_trial_browse",
            "sweep_id",
            "model_id",
            "prompt_id",
            "toolset",
            "scenario_id",
            "repetition",
            "variant",
        ),
        Index(
            "ix_trial_browse_outcome",
            "sweep_id",
            "outcome",
            "model_id",
            "prompt_id",
            "toolset",
            "scenario_id",
            "repetition",
            "variant",
        ),
        Index("ix_trial_browse_latency", "sweep_id", "latency_s"),
        Index("ix_trial_browse_scenario", "sweep_id", "scenario_id", "repetition"),
        Index("ix_trial_browse_newest", "sweep_id", "finished_at"),
        # One per filter of the explorer that had none (migrations 22, 23): the filter's column
        # after the sweep, then scenario order, so a filtered page is an index range read in
        # the order it shows, and its next page starts where the last stopped (keyset).
        *(Index(name, "sweep_id", column, *BROWSE_ORDER) for name, column in FILTER_INDEXES),
    )

    trial_id: str = Field(primary_key=True)
    sweep_id: str = Field(index=True)
    model_id: str
    prompt_id: str
    scenario_id: str
    scenario_version: int
    tier: str
    expected_tools: str
    """JSON list of the tools the scenario expects (per-tool scorecards group on it)."""
    repetition: int
    variant: int = 0
    """0 for the scenario's own prompt, k for its k-th paraphrase."""
    toolset: str = Field(default="", sa_column_kwargs={"server_default": ""})
    """The tool set that replaced the scenario's servers; empty when it ran with its own."""
    status: str = Field(default="pending", index=True)
    queue: str = ""
    """The broker queue the trial was published to (its model's hardware tag)."""
    node: str | None = None
    """The worker node that ran (or is running) it."""
    attempts: int = 0
    """How many times a worker started it: above 1 after a redelivery or a retry."""
    outcome: str | None = None
    first_try: bool | None = None
    """A pass with no wrong or repeated call of an expected tool; NULL when not graded, and for
    trials recorded before it was kept."""
    route: str | None = None
    """The scenario route the trial passed by, or was judged by; NULL for a scenario without
    routes."""
    left_cassette: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    """A server replayed from a cassette got a call the cassette never recorded."""
    stop_reason: str | None = None
    detail: str = ""
    latency_s: float | None = None
    first_token_s: float | None = None
    model_s: float | None = None
    tokens_prompt: int = 0
    tokens_completion: int = 0
    tokens_measured: bool = Field(default=True, sa_column_kwargs={"server_default": true()})
    """False where the trial's tokens were not measured (an agent whose model calls did not
    pass the farm): its two counts then read 0 and mean nothing; true for every trial recorded
    before it was kept (the farm's own loop measures them)."""
    turns: int = 0
    final_answer: str | None = None
    transcript_json: str = "[]"
    setup_json: str = Field(default="[]", sa_column_kwargs={"server_default": "[]"})
    """JSON list of the scenario's setup calls as made before the model started (the model's
    own calls are tool_call rows)."""
    turns_json: str = Field(default="[]", sa_column_kwargs={"server_default": "[]"})
    """A conversation's turns with their own verdicts (TurnResult, JSON list); `[]` for a
    one-prompt scenario. Kept with the trial (not a table) since a turn is read only with it."""
    elicitations_json: str = Field(default="[]", sa_column_kwargs={"server_default": "[]"})
    """The trial's elicitation exchanges (TrialResult.elicitations), in order."""
    recovered: bool | None = None
    """TrialResult.recovered: null when no call got an error result."""
    steps_json: str = Field(default="[]", sa_column_kwargs={"server_default": "[]"})
    """TrialResult.steps (JSON list): each expected step with the call that did it, or why
    none did; `[]` for a conversation (its turns keep theirs) and for trials graded before it
    was kept."""
    user_sim_json: str = Field(default="", sa_column_kwargs={"server_default": ""})
    """TrialResult.user_sim as JSON (the simulated user's identity, tokens, seconds, errors and
    final-state calls); empty for a trial without a simulated user."""
    agent_output_json: str = Field(default="", sa_column_kwargs={"server_default": ""})
    """TrialResult.agent_output as JSON (an agent's stdout and stderr, the last 8 KB of each);
    empty for a model's trial."""
    user_identity: str | None = None
    """UserIdentity.pool_key: which simulated user (model, pins, temperature, guideline) the
    trial met, so a scorecard says when it pools several; NULL without one."""
    user_errors: int | None = None
    """How many of the simulated user's messages held a fact not on its card; NULL for a
    trial without a simulated user."""
    failure_source: str | None = None
    """TrialResult.failure_source (`agent`, `user`, `none`); NULL without a simulated user."""
    state_json: str = Field(default="", sa_column_kwargs={"server_default": ""})
    """TrialResult.state as JSON (each probe expected vs found, what decided the outcome);
    empty for a trial without `state:` probes."""
    state_passed: bool | None = None
    """Every state probe fit; NULL for a trial without probes (or not graded)."""
    other_path: bool | None = None
    """The state passed and the calls did not (StateVerdict.other_path); NULL without probes."""
    provenance_json: str = "{}"
    host: str | None = None
    worker_tag: str | None = None
    payload_json: str
    """The TrialSpec, so a trial can be re-run exactly."""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    beat_at: datetime | None = None
    """The lease of a `running` trial: renewed every heartbeat by the process running it. A
    lease older than a few heartbeats means that process is gone, and the trial may be taken."""


class ToolCallRow(SQLModel, table=True):
    """One tool call of one trial; (trial_id, idx) is unique so re-runs rewrite, not add.

    The trial's sweep, model, prompt and tool set are repeated here so the scorecard's
    per-tool rows read this table alone: joining millions of calls to their trials was most of
    the time of a large scorecard."""

    __tablename__ = "tool_call"
    __table_args__ = (Index("ix_tool_call_sweep", "sweep_id"),)

    trial_id: str = Field(primary_key=True, foreign_key="trial.trial_id")
    idx: int = Field(primary_key=True)
    sweep_id: str = Field(default="", sa_column_kwargs={"server_default": ""})
    model_id: str = Field(default="", sa_column_kwargs={"server_default": ""})
    prompt_id: str = Field(default="", sa_column_kwargs={"server_default": ""})
    toolset: str = Field(default="", sa_column_kwargs={"server_default": ""})
    server: str | None = None
    tool: str
    arguments_json: str
    ok: bool
    error: str | None = None
    result_digest: str = ""
    whole_json: str = Field(default="", sa_column_kwargs={"server_default": ""})
    """The whole result where the transcript does not hold it, and its structured content
    (ToolCallRecord.whole_json); empty for calls recorded before schema version 11."""
    latency_s: float = 0.0


class ScoringRow(SQLModel, table=True):
    """One scoring pass over a sweep's transcripts: at run time, or a later `farm rescore`.
    Scores are never overwritten; each pass has its own id and rows."""

    __tablename__ = "scoring"

    scoring_id: str = Field(primary_key=True)
    sweep_id: str = Field(index=True)
    kind: str
    """`run` (scored as the trials ran) or `rescore`."""
    created_at: datetime
    config_json: str
    """Grader version, judge (model, runs, temperature), rubric override, weights, tolerance."""


class AnswerScoreRow(SQLModel, table=True):
    """The answer-quality record of one trial under one scoring pass."""

    __tablename__ = "answer_score"
    __table_args__ = (Index("ix_answer_score_sweep", "sweep_id", "scoring_id"),)

    trial_id: str = Field(primary_key=True, foreign_key="trial.trial_id")
    scoring_id: str = Field(primary_key=True)
    sweep_id: str
    model_id: str
    prompt_id: str
    toolset: str = ""
    baseline: bool = False
    scenario_id: str
    outcome: str
    keyword_coverage: float | None = None
    grounding_rate: float | None = None
    grounded: int = 0
    unresolved: int = 0
    hallucinated: int = 0
    judge_quality: float | None = None
    efficiency: float
    fairness: float
    tool_fluency: float | None = None
    discoverability: float | None = None
    adoption: float
    tokens_reasoning: int = 0
    tokens_measured: bool = Field(default=True, sa_column_kwargs={"server_default": true()})
    """False where the trial's reasoning tokens were not measured (an agent whose model calls
    did not pass the farm): `tokens_reasoning` then reads 0 and means nothing; true for every
    score recorded before it was kept. Tool I/O and verification are the farm's own counts."""
    tokens_tool_io: int = 0
    tokens_verification: int = 0
    estimated_json: str = "[]"
    judge_model: str = ""
    rubric_id: str = ""
    rubric_hash: str = ""
    judge_s: float = 0.0
    citations_json: str = "[]"
    created_at: datetime


class JudgementRow(SQLModel, table=True):
    """One criterion of one judge run on one trial (many per trial: runs × criteria)."""

    __tablename__ = "judgement"
    __table_args__ = (Index("ix_judgement_sweep", "sweep_id", "scoring_id"),)

    trial_id: str = Field(primary_key=True, foreign_key="trial.trial_id")
    scoring_id: str = Field(primary_key=True)
    run: int = Field(primary_key=True)
    criterion: str = Field(primary_key=True)
    sweep_id: str
    step: str
    score: float | None = None
    normalized: float | None = None
    rationale: str = ""
    judge_model: str = ""
    judge_pins_json: str = "{}"
    rubric_hash: str = ""


class AnchorCheckRow(SQLModel, table=True):
    """One `farm anchors verify`: did this judge and rubric pass the drift guard?"""

    __tablename__ = "anchor_check"

    id: int | None = Field(default=None, primary_key=True)
    judge_key: str = Field(index=True)
    """The judge model's id and pins, as a digest (ModelTarget.key())."""
    judge_model: str
    rubric_id: str
    rubric_hash: str
    rho: float | None = None
    passed: bool
    detail: str = ""
    checked_at: datetime
    folder: str = ""
    """The anchor folder verified (relative to the repository when inside it); empty for a
    check recorded before folders were."""
    lock_sha256: str = ""
    """SHA256 of the folder's `anchors.lock` file as verified (empty when there was none)."""
    threshold: float | None = None
    """The ρ the gate required: the lock's threshold (below 0.85 only when the lock was
    written with `--allow-lower-threshold`)."""


class NodeRow(SQLModel, table=True):
    """One worker node that enrolled: what it serves, what it runs, when it was last alive."""

    __tablename__ = "node"

    name: str = Field(primary_key=True)
    """The Celery node name, e.g. `farm-igpu@labbox3`."""
    host: str
    tags_json: str
    """JSON list of the hardware tags (queues) it consumes."""
    models_json: str = "[]"
    """JSON list of the models it can reach (bundled local models, endpoint models)."""
    versions_json: str = "{}"
    concurrency: int = 1
    started_at: datetime
    last_heartbeat: datetime
    stopped_at: datetime | None = None


class ScorecardRow(SQLModel, table=True):
    """A sweep's scorecard as built by the aggregate task; rebuilt on demand."""

    __tablename__ = "scorecard"

    sweep_id: str = Field(primary_key=True)
    version: int = 1
    """Format version of `card_json`."""
    built_at: datetime
    trials_done: int
    card_json: str


class UserTurnRow(SQLModel, table=True):
    """A simulated user's message, cached by everything its model was given (temperature 0
    only), so a repeated agent behaviour meets the identical user at no second call; shared
    by every worker through the results database (docs/simulated-user.md)."""

    __tablename__ = "user_turn"

    key: str = Field(primary_key=True)
    """sha256 of the user's input: its target (pins included), the pins its adapter reports,
    temperature, max_tokens, guideline version, system prompt (guideline and card) and the
    visible conversation so far."""
    text: str
    """The user model's reply as it came (before the stop marker is looked for)."""
    model_id: str
    """The user model's target id, for a person reading the table."""
    created_at: datetime


class SchemaVersionRow(SQLModel, table=True):
    """Which migrations the database has had (see schema/db/migrate.py)."""

    __tablename__ = "schema_version"

    version: int = Field(primary_key=True)
    applied_at: datetime
    description: str
