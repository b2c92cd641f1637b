"""The tool calls of a sweep, read for their latency percentiles (grouped on PostgreSQL)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from mcp_farm.scheduler.scorecard.queries.columns import CONFIG, config_prompt
from mcp_farm.scheduler.scorecard.queries.pg_arrays import fetch_with_arrays
from mcp_farm.schema import UNGRADED

# Tool calls carry their trial's sweep, model and configuration: no join to the trials.
# PostgreSQL hands back one array of samples per group (hash aggregation, no sort, in binary);
# SQLite has no array_agg, so there the rows come back one by one. numpy does the rest.
PG_CALLS = f"""
select model_id, {CONFIG} as prompt_id, tool, count(*) as calls,
       count(*) filter (where ok) as ok, array_agg(latency_s) as latency
from tool_call where sweep_id = %(sweep)s
group by model_id, {CONFIG}, tool
"""

SAMPLE_CALLS = f"""
select model_id, {CONFIG} as prompt_id, tool, 1 as calls, case when ok then 1 else 0 end as ok,
       latency_s
from tool_call where sweep_id = :sweep
"""


def grouped_calls(conn: Connection, sweep_id: str) -> list[Any]:
    """PostgreSQL: one row per model × configuration × tool, its latencies as a numpy array."""
    return fetch_with_arrays(conn, PG_CALLS, {"sweep": sweep_id})


def single_calls(conn: Connection, sweep_id: str) -> list[Any]:
    """Any database: one row per tool call, with its own latency."""
    return list(conn.execute(text(SAMPLE_CALLS), {"sweep": sweep_id}))


# Only trials with a failed call are read, call by call; the join to the trials (graded, and
# not left out for leaving their cassette) is over those few.
ERRORED_CALLS = f"""
select c.model_id, {config_prompt("c")} as prompt_id, c.trial_id, c.tool, c.ok
from tool_call c join trial t on t.trial_id = c.trial_id
where c.sweep_id = :sweep and t.status = 'done'
  and t.outcome not in ({", ".join(repr(o) for o in UNGRADED)})
  and (not :skip_left or not t.left_cassette)
  and c.trial_id in (select trial_id from tool_call where sweep_id = :sweep and not ok)
order by c.trial_id, c.idx
"""


def errored_trial_calls(conn: Connection, sweep_id: str, skip_left: bool) -> list[Any]:
    """(model_id, prompt_id, trial_id, tool, ok) of every call of each graded trial in which
    some call failed, in call order."""
    params = {"sweep": sweep_id, "skip_left": skip_left}
    return list(conn.execute(text(ERRORED_CALLS), params))
