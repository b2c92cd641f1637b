"""Database tables. JSON-valued columns are stored as text so SQLite and Postgres agree."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index
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


class TrialRow(SQLModel, table=True):
    """One trial: inserted `pending` at submission, upserted by the worker that runs it."""

    __tablename__ = "trial"
    __table_args__ = (Index("ix_trial_sweep_status", "sweep_id", "status"),)

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
    status: str = Field(default="pending", index=True)
    queue: str = ""
    """The broker queue the trial was published to (its model's hardware tag)."""
    node: str | None = None
    """The worker node that ran (or is running) it."""
    attempts: int = 0
    """How many times a worker started it: above 1 after a redelivery or a retry."""
    outcome: str | None = None
    stop_reason: str | None = None
    detail: str = ""
    latency_s: float | None = None
    first_token_s: float | None = None
    model_s: float | None = None
    tokens_prompt: int = 0
    tokens_completion: int = 0
    turns: int = 0
    final_answer: str | None = None
    transcript_json: str = "[]"
    provenance_json: str = "{}"
    host: str | None = None
    worker_tag: str | None = None
    payload_json: str
    """The TrialSpec, so a trial can be re-run exactly."""
    started_at: datetime | None = None
    finished_at: datetime | None = None


class ToolCallRow(SQLModel, table=True):
    """One tool call of one trial; (trial_id, idx) is unique so re-runs rewrite, not add."""

    __tablename__ = "tool_call"

    trial_id: str = Field(primary_key=True, foreign_key="trial.trial_id")
    idx: int = Field(primary_key=True)
    server: str | None = None
    tool: str
    arguments_json: str
    ok: bool
    error: str | None = None
    result_digest: str = ""
    latency_s: float = 0.0


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


class SchemaVersionRow(SQLModel, table=True):
    """Which migrations the database has had (see schema/migrate.py)."""

    __tablename__ = "schema_version"

    version: int = Field(primary_key=True)
    applied_at: datetime
    description: str
