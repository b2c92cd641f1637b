"""What a rescore reads and writes: a recorded trial with its calls, then its new answer score."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import col, select

from mcp_farm.schema import AnswerScore, StoreError
from mcp_farm.schema.db import (
    ToolCallRow,
    TrialRow,
    session_scope,
)
from mcp_farm.workers.store.results import write_answer


def recorded_trial(engine: Engine, trial_id: str) -> tuple[TrialRow, list[ToolCallRow]]:
    """The trial row and its tool-call rows in call order, detached from their session; a
    StoreError if no such trial was recorded."""
    with session_scope(engine) as session:
        trial = session.get(TrialRow, trial_id)
        if trial is None:
            raise StoreError(f"no trial {trial_id[:12]} to rescore")
        call_rows = list(
            session.exec(
                select(ToolCallRow)
                .where(col(ToolCallRow.trial_id) == trial.trial_id)
                .order_by(col(ToolCallRow.idx))
            )
        )
        session.expunge_all()
    return trial, call_rows


def save_rescore(
    engine: Engine, score: AnswerScore, model_id: str, prompt_id: str, scenario_id: str
) -> None:
    """Write a new answer score (and its judgements) for a recorded trial, in one transaction."""
    with engine.begin() as conn:
        write_answer(conn, score, model_id, prompt_id, scenario_id)
