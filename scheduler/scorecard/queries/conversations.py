"""The conversation trials of a sweep as the scorecard reads them (config, outcome and turns),
and every trial's recovery after an error result."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from mcp_farm.scheduler.scorecard.queries.columns import CONFIG
from mcp_farm.schema import UNGRADED

# Only conversations store turns; a one-prompt trial's turns_json is '[]' and is never read.
_QUERY = f"""select model_id, {CONFIG} as config, outcome, turns_json from trial
where sweep_id = :sweep and status = 'done' and turns_json <> '[]'
  and outcome not in ({", ".join(repr(o) for o in UNGRADED)})
  and (not :skip_left or not left_cassette)
order by model_id, config"""


def conversation_trials(conn: Connection, sweep_id: str, skip_left: bool) -> list[Any]:
    """(model_id, config, outcome, turns_json) of every graded conversation trial; those that
    left their cassette only when `skip_left` is false."""
    return list(conn.execute(text(_QUERY), {"sweep": sweep_id, "skip_left": skip_left}))


_RECOVERY = f"""select model_id, {CONFIG} as config, count(recovered) as errored,
       sum(case when recovered then 1 else 0 end) as recovered
from trial
where sweep_id = :sweep and status = 'done' and recovered is not null
  and outcome not in ({", ".join(repr(o) for o in UNGRADED)})
  and (not :skip_left or not left_cassette)
group by model_id, {CONFIG}"""


def recovery_counts(conn: Connection, sweep_id: str, skip_left: bool) -> list[Any]:
    """(model_id, config, errored, recovered) per config with a trial in which a call failed."""
    return list(conn.execute(text(_RECOVERY), {"sweep": sweep_id, "skip_left": skip_left}))
