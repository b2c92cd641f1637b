"""One trial's page SQL: the trial with its calls, answer scores, judge verdicts, the same
place in the sweep's other configurations and in the sweeps that replay it or it replays; and
trial ids from a shortened one."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from mcp_farm.scheduler.scorecard.queries.columns import CONFIG


@dataclass(frozen=True)
class TrialRecord:
    """One trial with everything stored about it."""

    trial: Any
    """The trial row (every column, and `config`)."""
    calls: list[Any]
    """Its tool_call rows, in order."""
    answers: list[Any]
    """Its answer_score rows, one per scoring pass, oldest first."""
    judgements: list[Any]
    """Its judgement rows: per scoring pass, run and criterion."""
    siblings: list[Any]
    """Trials of the same sweep, scenario, repetition and wording in other configurations."""
    replays: list[tuple[str, Any]] = field(default_factory=list)
    """(`replays` or `replayed by`, trial row): the recorded trial this one replays, and the
    trials of later sweeps that replay this one."""


TRIAL_SQL = f"select trial.*, {CONFIG} as config from trial where trial_id = :t"
CALLS_SQL = "select * from tool_call where trial_id = :t order by idx"
ANSWERS_SQL = """
select a.*, s.kind as scoring_kind from answer_score a
left join scoring s on s.scoring_id = a.scoring_id
where a.trial_id = :t order by a.created_at
"""
JUDGEMENTS_SQL = "select * from judgement where trial_id = :t order by scoring_id, run, criterion"
SIBLINGS_SQL = f"""
select trial_id, model_id, {CONFIG} as config, outcome, status from trial
where sweep_id = :sweep and scenario_id = :scenario and repetition = :rep
  and variant = :variant and trial_id <> :t
order by model_id, prompt_id, toolset
"""


SAME_PLACE_SQL = f"""
select trial_id, sweep_id, model_id, {CONFIG} as config, outcome, status from trial
where sweep_id = :sweep and model_id = :model and prompt_id = :prompt and toolset = :toolset
  and scenario_id = :scenario and repetition = :rep and variant = :variant
"""
REPLAYING_SQL = "select sweep_id, spec_json from sweep where spec_json like '%replay%'"


def _replays(conn: Connection, trial: Any) -> list[tuple[str, Any]]:
    """The trial a replay trial replays (same place in the recorded sweep), and the trials
    that replay this one (same place in each sweep whose replay targets name this sweep)."""
    place = {
        "model": trial.model_id,
        "prompt": trial.prompt_id,
        "toolset": trial.toolset,
        "scenario": trial.scenario_id,
        "rep": trial.repetition,
        "variant": trial.variant,
    }
    model = _loads(trial.payload_json).get("model") or {}
    found: list[tuple[str, Any]] = []
    if model.get("adapter") == "replay" and model.get("model"):
        rows = conn.execute(text(SAME_PLACE_SQL), place | {"sweep": model["model"]})
        found += [("replays", r) for r in rows]
    for s in conn.execute(text(REPLAYING_SQL)):
        models = _loads(s.spec_json).get("models") or []
        if any(m.get("adapter") == "replay" and m.get("model") == trial.sweep_id for m in models):
            rows = conn.execute(text(SAME_PLACE_SQL), place | {"sweep": s.sweep_id})
            found += [("replayed by", r) for r in rows]
    return found


def _loads(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def trial_record(*, engine: Engine, trial_id: str) -> TrialRecord | None:
    """The trial and its rows, or None when no trial has that id."""
    with engine.connect() as conn:
        trial = conn.execute(text(TRIAL_SQL), {"t": trial_id}).first()
        if trial is None:
            return None
        by_id = {"t": trial_id}
        siblings = conn.execute(
            text(SIBLINGS_SQL),
            {
                "t": trial_id,
                "sweep": trial.sweep_id,
                "scenario": trial.scenario_id,
                "rep": trial.repetition,
                "variant": trial.variant,
            },
        )
        return TrialRecord(
            trial=trial,
            calls=list(conn.execute(text(CALLS_SQL), by_id)),
            answers=list(conn.execute(text(ANSWERS_SQL), by_id)),
            judgements=list(conn.execute(text(JUDGEMENTS_SQL), by_id)),
            siblings=list(siblings),
            replays=_replays(conn, trial),
        )


def trial_ids_starting(*, engine: Engine, prefix: str, limit: int = 2) -> list[str]:
    """Trial ids that start with `prefix` (a shortened id, as the lists print them)."""
    sql = "select trial_id from trial where trial_id >= :p and trial_id < :q order by trial_id"
    with engine.connect() as conn:
        found = conn.execute(
            text(f"{sql} limit {int(limit)}"), {"p": prefix, "q": prefix + "\uffff"}
        )
        return [str(r[0]) for r in found]
