"""Answer-quality reads and writes: scoring passes, scores, judgements, anchor checks, and the
trials a rescore covers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from mcp_farm.scheduler.scorecard.queries.columns import config_prompt
from mcp_farm.schema.db import (
    AnchorCheckRow,
    session_scope,
)

SCORING_SQL = """
select scoring_id, kind, config_json from scoring
where sweep_id = :sweep and exists
  (select 1 from answer_score a where a.sweep_id = :sweep and a.scoring_id = scoring.scoring_id)
order by created_at desc
"""

SCORES_SQL = f"""
select a.model_id, {config_prompt("a")} as config, a.toolset, a.baseline, a.scenario_id, a.fairness,
       a.keyword_coverage, a.judge_quality, a.grounding_rate, a.efficiency, a.adoption,
       a.tool_fluency, a.discoverability, a.grounded, a.unresolved, a.hallucinated,
       a.tokens_reasoning, a.tokens_measured, a.tokens_tool_io, a.tokens_verification,
       a.estimated_json,
       a.judge_s, t.model_s
from answer_score a join trial t on t.trial_id = a.trial_id
where a.sweep_id = :sweep and a.scoring_id = :scoring
"""

JUDGEMENTS_SQL = f"""
select a.model_id, {config_prompt("a")} as config, a.scenario_id, j.trial_id, j.run, j.step,
       j.criterion, j.normalized, j.judge_model, j.rubric_hash, a.rubric_id
from judgement j join answer_score a
  on a.trial_id = j.trial_id and a.scoring_id = j.scoring_id
where a.sweep_id = :sweep and j.scoring_id = :scoring
"""

ANCHORS_SQL = """
select passed, rho, checked_at, folder, lock_sha256, threshold from anchor_check
where judge_key = :judge and rubric_hash = :rubric order by checked_at desc, id desc
"""

RUBRICS_SQL = (
    "select distinct rubric_hash from answer_score"
    " where sweep_id = :sweep and scoring_id = :scoring and rubric_hash <> ''"
)


def scoring_passes(conn: Connection, sweep_id: str) -> Sequence[Any]:
    """The sweep's scoring passes that stored scores, newest first."""
    return conn.execute(text(SCORING_SQL), {"sweep": sweep_id}).all()


def rubric_hashes(conn: Connection, sweep_id: str, scoring: str) -> list[str]:
    """Every rubric the pass scored with (by hash)."""
    found = conn.execute(text(RUBRICS_SQL), {"sweep": sweep_id, "scoring": scoring}).scalars()
    return list(found)


def anchor_check(conn: Connection, judge: str, rubric_hash: str) -> Any | None:
    """The anchor check that decides a judge's verdict with a rubric (`passed`, `rho`,
    `checked_at`, `folder`, `lock_sha256`, `threshold`), if any: each folder's newest check
    counts, and the newest failing one among them decides, so a pass on a second folder cannot
    cover a failure on another; with none failing, the newest pass."""
    rows = conn.execute(text(ANCHORS_SQL), {"judge": judge, "rubric": rubric_hash}).all()
    latest: dict[str, Any] = {}
    for row in rows:  # newest first
        latest.setdefault(row.folder, row)
    if len(latest) > 1:
        # Checks stored before folders were recorded cannot be re-run as such: the first check
        # that names its folder supersedes them.
        latest.pop("", None)
    failed = [row for row in latest.values() if not row.passed]
    return (failed or list(latest.values()) or [None])[0]


def answer_scores(conn: Connection, sweep_id: str, scoring: str) -> Sequence[Any]:
    """One row per scored trial of the pass, with its trial's model time."""
    return conn.execute(text(SCORES_SQL), {"sweep": sweep_id, "scoring": scoring}).all()


def judgements(conn: Connection, sweep_id: str, scoring: str) -> Sequence[Any]:
    """Every judge verdict of the pass (run, step, criterion), with its trial's configuration."""
    return conn.execute(text(JUDGEMENTS_SQL), {"sweep": sweep_id, "scoring": scoring}).all()


def record_anchor_check(
    engine: Engine,
    *,
    judge_key: str,
    judge_model: str,
    rubric_id: str,
    rubric_hash: str,
    rho: float | None,
    passed: bool,
    detail: str,
    folder: str = "",
    lock_sha256: str = "",
    threshold: float | None = None,
) -> None:
    """Record one run of the anchor gate (what reports read as the judge's verdict), with what
    it verified: the anchor folder, its lock's hash and the threshold it required."""
    with session_scope(engine) as session:
        session.add(
            AnchorCheckRow(
                judge_key=judge_key,
                judge_model=judge_model,
                rubric_id=rubric_id,
                rubric_hash=rubric_hash,
                rho=rho,
                passed=passed,
                detail=detail,
                checked_at=datetime.now(UTC),
                folder=folder,
                lock_sha256=lock_sha256,
                threshold=threshold,
            )
        )


def answer_trial_payloads(engine: Engine, sweep_id: str) -> list[tuple[str, str]]:
    """(trial id, payload JSON) of the sweep's done trials that are not infra errors."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "select trial_id, payload_json from trial where sweep_id = :s and status = 'done'"
                " and outcome not in ('infra_error', 'harness_error') order by trial_id"
            ),
            {"s": sweep_id},
        ).all()
    return [(r.trial_id, r.payload_json) for r in rows]


def scored_count(engine: Engine, sweep_id: str, scoring: str) -> int:
    """Trials of the sweep that have an answer score under `scoring`."""
    with engine.connect() as conn:
        done: int = conn.execute(
            text("select count(*) from answer_score where sweep_id = :s and scoring_id = :c"),
            {"s": sweep_id, "c": scoring},
        ).scalar_one()
    return done
