"""The conversation trials of a sweep as the scorecard and `farm compare` read them: config,
scenario, outcome and stored turns, in one pass over the trials that have turns; and the trials
with a simulated user (counts per config, and the user identities each config met)."""

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


_WHERE = f"""where sweep_id = :sweep and status = 'done' and user_errors is not null
  and outcome not in ({", ".join(repr(o) for o in UNGRADED)})
  and (not :skip_left or not left_cassette)"""

# Only trials with a simulated user have `user_errors`; the others are never read.
_COUNTS = f"""select model_id, {CONFIG} as config, count(*) as n,
       sum(case when outcome = 'pass' then 1 else 0 end) as passed,
       sum(case when user_errors = 0 then 1 else 0 end) as clean,
       sum(case when user_errors = 0 and outcome = 'pass' then 1 else 0 end) as clean_passed,
       sum(case when failure_source = 'user' then 1 else 0 end) as by_user,
       sum(case when failure_source = 'agent' then 1 else 0 end) as by_agent
from trial
{_WHERE}
group by model_id, {CONFIG}
order by model_id, config"""

_USERS = f"""select distinct model_id, {CONFIG} as config, user_identity from trial
{_WHERE}
order by model_id, config, user_identity"""


# The crossed table's cells: the agent's repetition (and wording) against the user's seed,
# which only the stored user record holds (identity.seed), read in Python.
_CELLS = f"""select model_id, {CONFIG} as config, scenario_id, repetition, variant, outcome,
       user_sim_json from trial
{_WHERE}
order by model_id, config, scenario_id, repetition, variant"""


def user_cells(conn: Connection, sweep_id: str, skip_left: bool) -> list[Any]:
    """(model_id, config, scenario_id, repetition, variant, outcome, user_sim_json) of every
    graded trial with a simulated user."""
    return list(conn.execute(text(_CELLS), {"sweep": sweep_id, "skip_left": skip_left}))


def user_counts(conn: Connection, sweep_id: str, skip_left: bool) -> list[Any]:
    """(model_id, config, n, passed, clean, clean_passed, by_user, by_agent) per config."""
    return list(conn.execute(text(_COUNTS), {"sweep": sweep_id, "skip_left": skip_left}))


def user_identities(conn: Connection, sweep_id: str, skip_left: bool) -> list[Any]:
    """(model_id, config, user_identity) for each user identity a config met."""
    return list(conn.execute(text(_USERS), {"sweep": sweep_id, "skip_left": skip_left}))
