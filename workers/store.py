"""Writing results: one row per trial and per tool call, idempotent on trial_id."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import delete
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col

from schema import StoreError, ToolCallRow, TrialResult, TrialRow, TrialSpec, session_scope


def _insert(engine: Engine) -> Any:
    return postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert


def trial_values(spec: TrialSpec, result: TrialResult) -> dict[str, Any]:
    return {
        "trial_id": result.trial_id,
        "sweep_id": result.sweep_id,
        "model_id": result.model_id,
        "prompt_id": result.prompt_id,
        "scenario_id": result.scenario_id,
        "scenario_version": spec.scenario.version,
        "tier": result.tier,
        "expected_tools": json.dumps(result.expected_tools),
        "repetition": result.repetition,
        "status": result.status,
        "outcome": result.outcome,
        "stop_reason": result.stop_reason,
        "detail": result.detail,
        "latency_s": result.latency_s,
        "first_token_s": result.first_token_s,
        "tokens_prompt": result.tokens.prompt,
        "tokens_completion": result.tokens.completion,
        "turns": result.turns,
        "final_answer": result.final_answer,
        "transcript_json": json.dumps([m.model_dump(mode="json") for m in result.transcript]),
        "provenance_json": result.provenance.model_dump_json(),
        "host": result.provenance.host,
        "worker_tag": result.provenance.worker_tag,
        "payload_json": spec.model_dump_json(),
        "started_at": result.started_at,
        "finished_at": result.finished_at,
    }


def save_trial(*, engine: Engine, spec: TrialSpec, result: TrialResult) -> None:
    """Upsert the trial and replace its tool calls, in one transaction.

    A redelivered or re-run trial rewrites its one row and its calls; it never adds rows.
    """
    values = trial_values(spec, result)
    insert = _insert(engine)
    stmt = insert(TrialRow).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=["trial_id"],
        set_={k: v for k, v in values.items() if k != "trial_id"},
    )
    calls = [
        {
            "trial_id": result.trial_id,
            "idx": c.index,
            "server": c.server,
            "tool": c.tool,
            "arguments_json": json.dumps(c.arguments),
            "ok": c.ok,
            "error": c.error,
            "result_digest": c.result_digest,
            "latency_s": c.latency_s,
        }
        for c in result.tool_calls
    ]
    try:
        with session_scope(engine) as session:
            session.execute(stmt)
            session.execute(delete(ToolCallRow).where(col(ToolCallRow.trial_id) == result.trial_id))
            if calls:
                session.execute(insert(ToolCallRow).values(calls))
    except SQLAlchemyError as exc:
        raise StoreError(f"could not save trial {result.trial_id[:12]}: {exc}") from exc
