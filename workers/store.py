"""Writing results: one row per trial and per tool call, idempotent on trial_id."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal, TypeVar

from pydantic import BaseModel
from sqlalchemy import and_, delete, insert, or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col

from schema import (
    AnswerScore,
    AnswerScoreRow,
    JudgementRow,
    StoreError,
    SweepRow,
    ToolCallRow,
    TrialResult,
    TrialRow,
    TrialSpec,
    dialect_insert,
)
from workers.answer import counts

REPLACEMENT = "\ufffd"
"""What stands in, in stored text, for a character no database here can hold alike."""

# U+0000, and any surrogate code point (a Python str holds them only unpaired, or as a pair
# that UTF-8 still refuses).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

M = TypeVar("M", bound=BaseModel)


def storable(value: Any) -> Any:
    """`value` with every string made storable: the store's one text rule (README, Decisions).

    PostgreSQL's text type refuses U+0000 and its UTF-8 encoding refuses lone surrogates;
    SQLite takes both. Each becomes U+FFFD, in dict keys and nested values too, on every
    database alike, so a result reads back the same from either and every later reader
    (reports, rescoring) gets text that encodes. Other values pass unchanged.
    """
    if isinstance(value, str):
        return _UNSTORABLE.sub(REPLACEMENT, value)
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable(v) for v in value]
    return value


def storable_model(model: M) -> M:
    """A copy of a result model with the text rule applied to all its strings, so no field
    (present or added later) reaches a column unchecked."""
    return type(model).model_validate(storable(model.model_dump()))


def _dumps(value: Any) -> str:
    # default=str: an argument value no JSON type fits (an adapter's set, say) is written as
    # its text rather than failing the save.
    return json.dumps(value, default=str)


def trial_values(spec: TrialSpec, result: TrialResult) -> dict[str, Any]:
    """The trial row of `result` (give it a `storable_model` result)."""
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
        "variant": result.variant,
        "toolset": result.toolset,
        "status": result.status,
        "outcome": result.outcome,
        "stop_reason": result.stop_reason,
        "detail": result.detail,
        "latency_s": result.latency_s,
        "first_token_s": result.first_token_s,
        "model_s": result.model_s,
        "tokens_prompt": result.tokens.prompt,
        "tokens_completion": result.tokens.completion,
        "turns": result.turns,
        "final_answer": result.final_answer,
        "transcript_json": _dumps([m.model_dump(mode="json") for m in result.transcript]),
        "setup_json": _dumps([c.model_dump(mode="json") for c in result.setup_calls]),
        "provenance_json": result.provenance.model_dump_json(),
        "host": result.provenance.host,
        "worker_tag": result.provenance.worker_tag,
        "node": result.provenance.node or None,
        "payload_json": spec.model_dump_json(),
        "started_at": result.started_at,
        "finished_at": result.finished_at,
    }


@contextmanager
def _guarded(engine: Engine, what: str) -> Iterator[Connection]:
    """One transaction; database trouble becomes a StoreError (which callers retry)."""
    try:
        with engine.begin() as conn:
            yield conn
    except SQLAlchemyError as exc:
        raise StoreError(f"could not {what}: {exc}") from exc


def save_trial(*, engine: Engine, spec: TrialSpec, result: TrialResult) -> bool:
    """Upsert the trial and replace its tool calls, in one transaction; return whether the
    sweep has trials left to run.

    A redelivered or re-run trial rewrites its one row and its calls; it never adds rows.
    The "left" check runs after the commit: inside the transaction, two trials finishing at
    the same moment each see the other still `running`, and neither would start the
    aggregate. After the commit at least one of them sees none left (both may: the aggregate
    is idempotent).
    """
    result = storable_model(result)
    values = trial_values(spec, result)
    calls = [
        {
            "trial_id": result.trial_id,
            "idx": c.index,
            "sweep_id": result.sweep_id,
            "model_id": result.model_id,
            "prompt_id": result.prompt_id,
            "toolset": result.toolset,
            "server": c.server,
            "tool": c.tool,
            "arguments_json": _dumps(c.arguments),
            "ok": c.ok,
            "error": c.error,
            "result_digest": c.result_digest,
            "latency_s": c.latency_s,
        }
        for c in result.tool_calls
    ]
    with _guarded(engine, f"save trial {result.trial_id[:12]}") as conn:
        conn.execute(_upsert(engine.dialect.name, tuple(values)), values)
        conn.execute(delete(ToolCallRow).where(col(ToolCallRow.trial_id) == result.trial_id))
        if calls:
            conn.execute(dialect_insert(engine.dialect.name)(ToolCallRow), calls)
        if result.answer is not None:
            write_answer(conn, result.answer, result.model_id, result.prompt_id, result.scenario_id)
    with _guarded(engine, f"count what is left of sweep {result.sweep_id[:12]}") as conn:
        return _any_left(conn, result.sweep_id)


@lru_cache(maxsize=4)
def _upsert(dialect: str, columns: tuple[str, ...]) -> Any:
    """The trial upsert, built once with bound parameters (building it per trial from the
    values took milliseconds). Only `columns` are rewritten; queue and attempts are kept."""
    stmt = dialect_insert(dialect)(TrialRow)
    return stmt.on_conflict_do_update(
        index_elements=["trial_id"],
        set_={name: stmt.excluded[name] for name in columns if name != "trial_id"},
    )


def _any_left(conn: Connection, sweep_id: str) -> bool:
    # An index on (sweep_id, status) makes this one probe, however large the sweep.
    found = conn.execute(
        select(col(TrialRow.trial_id))
        .where(
            col(TrialRow.sweep_id) == sweep_id,
            col(TrialRow.status).in_(("pending", "running")),
        )
        .limit(1)
    ).first()
    return found is not None


Claim = Literal["claimed", "recorded", "cancelled", "held"]
"""What a claim found: the trial is this caller's to run; already recorded (a duplicate
delivery); its sweep was cancelled; or another process holds a fresh lease on it."""


def claim_trial(
    *, engine: Engine, trial_id: str, node: str, stale_before: datetime, force: bool = False
) -> Claim:
    """Mark a trial `running` on `node`, start its lease and count the attempt.

    A trial is claimable when it is pending, ended as infra_error, or is `running` under a
    lease older than `stale_before` (its holder died). A trial held under a fresh lease is
    `held`: the caller must try later, never run it beside its holder. A trial with no row (a
    payload run outside any sweep) just runs. `force` (a re-run) claims whatever the state.
    """
    now = datetime.now(UTC)
    runnable = [col(TrialRow.trial_id) == trial_id]
    if not force:
        active = select(col(SweepRow.sweep_id)).where(
            col(SweepRow.sweep_id) == col(TrialRow.sweep_id), col(SweepRow.status) == "active"
        )
        lapsed = or_(col(TrialRow.beat_at).is_(None), col(TrialRow.beat_at) < stale_before)
        runnable += [
            or_(
                col(TrialRow.status) == "pending",
                and_(col(TrialRow.status) == "done", col(TrialRow.outcome) == "infra_error"),
                and_(col(TrialRow.status) == "running", lapsed),
            ),
            active.exists(),
        ]
    with _guarded(engine, f"claim trial {trial_id[:12]}") as conn:
        claimed = conn.execute(
            update(TrialRow)
            .where(*runnable)
            .values(
                status="running",
                node=node or None,
                beat_at=now,
                attempts=col(TrialRow.attempts) + 1,
            )
            .returning(col(TrialRow.trial_id))
        ).first()
        if claimed is not None:
            return "claimed"
        row = conn.execute(
            select(col(TrialRow.status), col(SweepRow.status))
            .join(SweepRow, col(SweepRow.sweep_id) == col(TrialRow.sweep_id), isouter=True)
            .where(col(TrialRow.trial_id) == trial_id)
        ).first()
        if row is None:
            return "claimed"
        status, sweep_status = row
        if status == "done":
            return "recorded"
        if status == "running" and sweep_status == "active":
            return "held"
        # The sweep was cancelled: a trial put back to pending by a retry is cancelled too.
        conn.execute(
            update(TrialRow)
            .where(col(TrialRow.trial_id) == trial_id, col(TrialRow.status) == "pending")
            .values(status="cancelled")
        )
        return "cancelled"


def mark_retrying(*, engine: Engine, trial_id: str, detail: str) -> None:
    """Put a trial back to `pending` while an infrastructure problem is retried."""
    with _guarded(engine, f"mark trial {trial_id[:12]} for retry") as conn:
        conn.execute(
            update(TrialRow)
            .where(col(TrialRow.trial_id) == trial_id, col(TrialRow.status) == "running")
            .values(status="pending", detail=storable(detail))
        )


def fail_trial(*, engine: Engine, spec: TrialSpec, detail: str) -> bool:
    """Record a claimed trial that could not be run at all (its scenario no longer loads, the
    worker broke) as an infra_error, so it never stays `running`; return whether the sweep
    has trials left to run. Like any infra_error it is run again by a resume or a re-run."""
    with _guarded(engine, f"record trial {spec.trial_id[:12]} as failed") as conn:
        conn.execute(
            update(TrialRow)
            .where(col(TrialRow.trial_id) == spec.trial_id, col(TrialRow.status) == "running")
            .values(
                status="done",
                outcome="infra_error",
                stop_reason="infra_error",
                detail=storable(detail),
                finished_at=datetime.now(UTC),
            )
        )
    with _guarded(engine, f"count what is left of sweep {spec.sweep_id[:12]}") as conn:
        return _any_left(conn, spec.sweep_id)


def write_answer(
    conn: Connection, score: AnswerScore, model_id: str, prompt_id: str, scenario_id: str
) -> None:
    """Replace one trial's answer score and judgements under one scoring id (other scoring
    passes' rows are never touched)."""
    score = storable_model(score)
    row = score.model_dump(
        exclude={"version", "citations", "estimated", "judge_pins", "judgements", "rubric_id"}
    )
    found = counts(score.citations)
    row |= {
        "model_id": model_id,
        "prompt_id": prompt_id,
        "scenario_id": scenario_id,
        "rubric_id": score.rubric_id,
        "grounded": found["grounded"],
        "unresolved": found["unresolved"],
        "hallucinated": found["hallucinated"],
        "estimated_json": _dumps(score.estimated),
        "citations_json": _dumps([c.model_dump(mode="json") for c in score.citations]),
        "created_at": datetime.now(UTC),
    }
    mine = (
        col(AnswerScoreRow.trial_id) == score.trial_id,
        col(AnswerScoreRow.scoring_id) == score.scoring_id,
    )
    conn.execute(
        delete(JudgementRow).where(
            col(JudgementRow.trial_id) == score.trial_id,
            col(JudgementRow.scoring_id) == score.scoring_id,
        )
    )
    conn.execute(delete(AnswerScoreRow).where(*mine))
    conn.execute(insert(AnswerScoreRow).values(row))
    judged = [
        {
            "trial_id": score.trial_id,
            "scoring_id": score.scoring_id,
            "sweep_id": score.sweep_id,
            "judge_model": score.judge_model,
            "judge_pins_json": _dumps(score.judge_pins),
            "rubric_hash": score.rubric_hash,
            **j.model_dump(),
        }
        for j in score.judgements
    ]
    if judged:
        conn.execute(insert(JudgementRow), judged)
