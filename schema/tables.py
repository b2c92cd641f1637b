"""Database tables. JSON-valued columns are stored as text so SQLite and Postgres agree."""

from __future__ import annotations

from datetime import datetime

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


class TrialRow(SQLModel, table=True):
    """One trial: inserted `pending` at submission, upserted by the worker that runs it."""

    __tablename__ = "trial"

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
    status: str = Field(default="pending", index=True)
    outcome: str | None = None
    stop_reason: str | None = None
    detail: str = ""
    latency_s: float | None = None
    first_token_s: float | None = None
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
