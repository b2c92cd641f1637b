"""The conversation trials of a sweep as the scorecard and `farm compare` read them: config,
scenario, outcome and stored turns, in one pass over the trials that have turns."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from mcp_farm.scheduler.scorecard.queries.columns import CONFIG
from mcp_farm.schema import UNGRADED

# Only conversations store turns; a one-prompt trial's turns_json is '[]' and is never read.
# Ordered by repetition so the detail a report quotes for a failed turn is the same each time.
_QUERY = f"""select model_id, {CONFIG} as config, scenario_id, outcome, turns_json from trial
where sweep_id = :sweep and status = 'done' and turns_json <> '[]'
  and outcome not in ({", ".join(repr(o) for o in UNGRADED)})
  and (not :skip_left or not left_cassette)
order by model_id, config, scenario_id, repetition, variant"""


def conversation_trials(conn: Connection, sweep_id: str, skip_left: bool) -> list[Any]:
    """(model_id, config, scenario_id, outcome, turns_json) of every graded conversation trial;
    those that left their cassette only when `skip_left` is false."""
    return list(conn.execute(text(_QUERY), {"sweep": sweep_id, "skip_left": skip_left}))
