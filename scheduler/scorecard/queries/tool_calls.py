"""The tool calls of a sweep, read for their latency percentiles (grouped on PostgreSQL)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from mcp_farm.scheduler.scorecard.queries.columns import CONFIG
from mcp_farm.scheduler.scorecard.queries.pg_arrays import fetch_with_arrays

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
