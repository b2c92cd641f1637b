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
from sqlalchemy import and_, bindparam, delete, insert, or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col

from mcp_farm.schema import (
    AnswerScore,
    StoreError,
    TrialResult,
    TrialSpec,
    mask_known,
)
from mcp_farm.schema.db import (
    AnswerScoreRow,
    JudgementRow,
    SweepRow,
    ToolCallRow,
    TrialRow,
    dialect_insert,
)
from mcp_farm.workers.answer import counts
from mcp_farm.workers.store import pgpipe
from mcp_farm.workers.store.pgpipe import SaveStatements

REPLACEMENT = "\ufffd"
"""What stands in, in stored text, for a character no database here can hold alike."""

# U+0000, and any surrogate code point (a Python str holds them only unpaired, or as a pair
# that UTF-8 still refuses).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

M = TypeVar("M", bound=BaseModel)


FailedOutcome = Literal["infra_error", "harness_error"]


def storable(value: Any) -> Any:
    """`value` with every string made storable: the store's one text rule (docs/decisions.md).
    Every secret the farm knows (`schema.redact`) is masked in it too.

    PostgreSQL's text type refuses U+0000 and its UTF-8 encoding refuses lone surrogates;
    SQLite takes both. Each becomes U+FFFD, in dict keys and nested values too, on every
    database alike, so a result reads back the same from either and every later reader
    (reports, rescoring) gets text that encodes. Other values pass unchanged.
    """
    if isinstance(value, str):
        return mask_known(_UNSTORABLE.sub(REPLACEMENT, value))
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable(v) for v in value]
    return value


def storable_model(model: M) -> M:
    """The result model with the text rule applied to all its strings, so no field (present or
    added later) reaches a column unchecked: a copy where a string changed, else the model
    itself (rebuilding a whole trial result that needs nothing was most of this step's time)."""
    dumped = model.model_dump()
    cleaned = storable(dumped)
    return model if cleaned == dumped else type(model).model_validate(cleaned)


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
        "first_try": result.first_try,
        "route": result.route,
        "left_cassette": result.left_cassette,
        "stop_reason": result.stop_reason,
        "detail": result.detail,
        "latency_s": result.latency_s,
        "first_token_s": result.first_token_s,
        "model_s": result.model_s,
        # Not measured (an agent's): both counts 0, and the flag says they mean nothing.
        "tokens_prompt": result.tokens.prompt if result.tokens else 0,
        "tokens_completion": result.tokens.completion if result.tokens else 0,
        "tokens_measured": result.tokens is not None,
        "turns": result.turns,
        "final_answer": result.final_answer,
        "transcript_json": _dumps([m.model_dump(mode="json") for m in result.transcript]),
        "setup_json": _dumps([c.model_dump(mode="json") for c in result.setup_calls]),
        "turns_json": _dumps([t.model_dump(mode="json") for t in result.turn_results]),
        "elicitations_json": _dumps([e.model_dump(mode="json") for e in result.elicitations]),
        "recovered": result.recovered,
        "steps_json": _dumps([v.model_dump(mode="json") for v in result.steps]),
        "user_sim_json": result.user_sim.model_dump_json() if result.user_sim else "",
        "agent_output_json": (result.agent_output.model_dump_json() if result.agent_output else ""),
        "user_identity": result.user_sim.identity.pool_key if result.user_sim else None,
        "user_errors": len(result.user_sim.errors) if result.user_sim else None,
        "failure_source": result.failure_source,
        "state_json": result.state.model_dump_json() if result.state else "",
        "state_passed": result.state.passed if result.state else None,
        "other_path": result.state.other_path if result.state else None,
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


@contextmanager
def _connected(engine: Engine, what: str) -> Iterator[Connection]:
    """One pooled connection for several steps; database trouble becomes a StoreError (which
    callers retry)."""
    try:
        with engine.connect() as conn:
            yield conn
    except SQLAlchemyError as exc:
        raise StoreError(f"could not {what}: {exc}") from exc


def _alone(conn: Connection) -> Connection:
    """`conn` with each statement committing by itself, outside any transaction.

    For a statement atomic on its own: it costs one round trip, where a transaction adds a
    BEGIN and a COMMIT. (Under autocommit `conn.begin()` opens no real transaction, so a
    transaction comes first, then this; the pool resets the level when `conn` goes back.)"""
    return conn.execution_options(isolation_level="AUTOCOMMIT")


def save_trial(*, engine: Engine, spec: TrialSpec, result: TrialResult) -> bool:
    """Upsert the trial and replace its tool calls, in one transaction; return whether the
    sweep has trials left to run.

    A redelivered or re-run trial rewrites its one row and its calls; it never adds rows.
    The "left" check runs after the commit: inside the transaction, two trials finishing at
    the same moment each see the other still `running`, and neither would start the
    aggregate. After the commit at least one of them sees none left (both may: the aggregate
    is idempotent). It is a statement of its own on the same connection, its snapshot taken
    after this commit; on PostgreSQL it is sent with the transaction, so a save of an
    unjudged trial is one round trip (`mcp_farm.workers.store.pgpipe`).
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
            "whole_json": c.whole_json,
            "latency_s": c.latency_s,
        }
        for c in result.tool_calls
    ]
    dialect = engine.dialect.name
    if dialect == "postgresql" and result.answer is None:
        stmts = SaveStatements(
            upsert=_upsert(dialect, tuple(values)),
            drop_calls=_DROP_CALLS,
            insert_calls=_insert_calls(dialect),
            any_left=_ANY_LEFT,
        )
        return pgpipe.save(
            engine,
            stmts,
            values=values,
            calls=calls,
            trial_id=result.trial_id,
            sweep_id=result.sweep_id,
        )
    with _connected(engine, f"save trial {result.trial_id[:12]}") as conn:
        with conn.begin():
            conn.execute(_upsert(dialect, tuple(values)), values)
            conn.execute(_DROP_CALLS, {"trial_id": result.trial_id})
            if calls:
                conn.execute(_insert_calls(dialect), calls)
            if result.answer is not None:
                answer = result.answer
                write_answer(conn, answer, result.model_id, result.prompt_id, result.scenario_id)
        return _any_left(_alone(conn), result.sweep_id)


@lru_cache(maxsize=4)
def _upsert(dialect: str, columns: tuple[str, ...]) -> Any:
    """The trial upsert, built once with bound parameters (building it per trial from the
    values took milliseconds). Only `columns` are rewritten; queue and attempts are kept."""
    stmt = dialect_insert(dialect)(TrialRow)
    return stmt.on_conflict_do_update(
        index_elements=["trial_id"],
        set_={name: stmt.excluded[name] for name in columns if name != "trial_id"},
    )


@lru_cache(maxsize=2)
def _insert_calls(dialect: str) -> Any:
    return dialect_insert(dialect)(ToolCallRow)


# Statements built once, with bound parameters: building one per trial cost more CPU than
# running it.
_DROP_CALLS = delete(ToolCallRow).where(col(ToolCallRow.trial_id) == bindparam("trial_id"))

# An index on (sweep_id, status) makes this one probe, however large the sweep.
_ANY_LEFT = (
    select(col(TrialRow.trial_id))
    .where(
        col(TrialRow.sweep_id) == bindparam("sweep_id"),
        col(TrialRow.status).in_(("pending", "running")),
    )
    .limit(1)
)


def _any_left(conn: Connection, sweep_id: str) -> bool:
    return conn.execute(_ANY_LEFT, {"sweep_id": sweep_id}).first() is not None


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

    The claim is one UPDATE, atomic by itself, so it runs outside a transaction: one round
    trip. Only when it claims nothing does a second look say why.
    """
    params: dict[str, Any] = {
        "claim_id": trial_id,
        "claim_node": node or None,
        "claim_now": datetime.now(UTC),
    }
    if not force:
        params["stale_before"] = stale_before
    what = f"claim trial {trial_id[:12]}"
    if engine.dialect.name == "postgresql":
        claimed = pgpipe.claim(engine, _claim(force), params)
    else:
        with _connected(engine, what) as conn:
            claimed = _alone(conn).execute(_claim(force), params).first() is not None
    if claimed:
        return "claimed"
    with _connected(engine, what) as conn:
        return _unclaimed(_alone(conn), trial_id)


@lru_cache(maxsize=2)
def _claim(force: bool) -> Any:
    """The claiming UPDATE, built once per kind (see `claim_trial`)."""
    # Parameter names differ from column names: SQLAlchemy keeps those for the SET clause.
    runnable = [col(TrialRow.trial_id) == bindparam("claim_id")]
    if not force:
        active = select(col(SweepRow.sweep_id)).where(
            col(SweepRow.sweep_id) == col(TrialRow.sweep_id), col(SweepRow.status) == "active"
        )
        lapsed = or_(
            col(TrialRow.beat_at).is_(None), col(TrialRow.beat_at) < bindparam("stale_before")
        )
        runnable += [
            or_(
                col(TrialRow.status) == "pending",
                and_(col(TrialRow.status) == "done", col(TrialRow.outcome) == "infra_error"),
                and_(col(TrialRow.status) == "running", lapsed),
            ),
            active.exists(),
        ]
    return (
        update(TrialRow)
        .where(*runnable)
        .values(
            status="running",
            node=bindparam("claim_node"),
            beat_at=bindparam("claim_now"),
            attempts=col(TrialRow.attempts) + 1,
        )
        .returning(col(TrialRow.trial_id))
    )


def _unclaimed(conn: Connection, trial_id: str) -> Claim:
    """Why a trial could not be claimed (see `Claim`). Each statement stands alone: the
    cancelling UPDATE checks the status it changes, so it needs no transaction with the read."""
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


def fail_trial(
    *, engine: Engine, spec: TrialSpec, detail: str, outcome: FailedOutcome = "infra_error"
) -> bool:
    """Record a claimed trial that could not be run at all, so it never stays `running`, and
    return whether the sweep has trials left to run. An `infra_error` (its scenario no longer
    loads, a server cannot start) is run again by a resume or a re-run; a `harness_error` (a
    bug in the farm) is recorded once, with its traceback in `detail`, and never retried."""
    with _connected(engine, f"record trial {spec.trial_id[:12]} as failed") as conn:
        conn = _alone(conn)
        conn.execute(
            update(TrialRow)
            .where(col(TrialRow.trial_id) == spec.trial_id, col(TrialRow.status) == "running")
            .values(
                status="done",
                outcome=outcome,
                stop_reason=outcome,
                detail=storable(detail),
                finished_at=datetime.now(UTC),
            )
        )
        # After that statement's commit, as in save_trial.
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
        # Not measured (an agent's): 0 in the row, and the flag says it means nothing.
        "tokens_reasoning": score.tokens_reasoning or 0,
        "tokens_measured": score.tokens_reasoning is not None,
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
