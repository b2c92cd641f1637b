"""What `farm compare` reads of each side: its trial counts, its conversations, or its newest
answer scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from mcp_farm.scheduler.scorecard.queries.answers import SCORING_SQL
from mcp_farm.scheduler.scorecard.queries.columns import config_prompt
from mcp_farm.scheduler.scorecard.queries.conversations import conversation_trials
from mcp_farm.scheduler.scorecard.queries.provenance import skips_left_cassette
from mcp_farm.scheduler.scorecard.queries.scan import COUNTS_SQL

KNOWN_SQL = "select 1 from sweep where sweep_id = :s"

SIDE_SQL = f"""
select model_id, {config_prompt()} as config, scenario_id, fairness, adoption
from answer_score where sweep_id = :sweep and scoring_id = :scoring
"""

CRITERIA_SQL = f"""
select a.model_id, {config_prompt("a")} as config, j.criterion, avg(j.normalized) as mean
from judgement j join answer_score a on a.trial_id = j.trial_id and a.scoring_id = j.scoring_id
where a.sweep_id = :sweep and j.scoring_id = :scoring and j.normalized is not null
group by a.model_id, {config_prompt("a")}, j.criterion
"""


def trial_counts(engine: Engine, sweep_id: str) -> Sequence[Any] | None:
    """The sweep's done trials counted per group (COUNTS_SQL's rows), without the trials that
    left their cassette when the sweep excludes them (as its scorecard does); None when there
    is no such sweep."""
    with engine.connect() as conn:
        known = conn.execute(text(KNOWN_SQL), {"s": sweep_id}).first()
        if known is None:
            return None
        rows = conn.execute(text(COUNTS_SQL), {"sweep": sweep_id}).all()
        if skips_left_cassette(conn, sweep_id):
            return [r for r in rows if not r.left_cassette]
        return rows


def conversation_rows(engine: Engine, sweep_id: str) -> list[Any]:
    """The sweep's graded conversation trials (conversation_trials' rows), counted as its
    scorecard counts them (without those that left their cassette when it excludes them)."""
    with engine.connect() as conn:
        return conversation_trials(conn, sweep_id, skips_left_cassette(conn, sweep_id))


def newest_answer_scores(
    engine: Engine, sweep_id: str
) -> tuple[Any, Sequence[Any], Sequence[Any]] | None:
    """From the sweep's newest scoring pass: the pass (`scoring_id`, `config_json`), its scores
    per trial and its mean judge score per configuration and criterion. None without a pass."""
    with engine.connect() as conn:
        passes = conn.execute(text(SCORING_SQL), {"sweep": sweep_id}).all()
        if not passes:
            return None
        scoring = passes[0]
        args = {"sweep": sweep_id, "scoring": scoring.scoring_id}
        rows = conn.execute(text(SIDE_SQL), args).all()
        criteria = conn.execute(text(CRITERIA_SQL), args).all()
    return scoring, rows, criteria
