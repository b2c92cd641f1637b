"""Sample trials for the HTML report's drill-down: a few per scenario and configuration."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from mcp_farm.scheduler.scorecard.queries.columns import CONFIG

SAMPLES_PER_CELL = 2

SampleTrials = dict[tuple[str, str, str], list[Any]]
"""(model, configuration, scenario) → its sample trials, failures first."""

SAMPLES_SQL = f"""
select * from (
  select model_id, {CONFIG} as prompt_id, scenario_id, repetition, variant, outcome, detail, latency_s,
         final_answer, transcript_json, setup_json, elicitations_json, turns_json,
         row_number() over (partition by model_id, {CONFIG}, scenario_id
                            order by case when outcome = 'pass' then 1 else 0 end, repetition)
           as pick
  from trial where sweep_id = :sweep and status = 'done'
) ranked where pick <= :per
order by model_id, prompt_id, scenario_id, pick
"""


def sample_trials(engine: Engine, sweep_id: str) -> SampleTrials:
    """Up to SAMPLES_PER_CELL done trials of every scenario and configuration, failures first."""
    found: SampleTrials = defaultdict(list)
    with engine.connect() as conn:
        rows = conn.execute(text(SAMPLES_SQL), {"sweep": sweep_id, "per": SAMPLES_PER_CELL})
        for r in rows:
            found[(r.model_id, r.prompt_id, r.scenario_id)].append(r)
    return found
