"""Where a sweep's results came from: its recorded spec, one provenance per model and node, one
payload per prompt config, and the provenance of the trials whose prompt selects tools."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection

from mcp_farm.scheduler.scorecard.queries.columns import CONFIG
from mcp_farm.schema import UNGRADED

SWEEP_SQL = "select name, spec_json from sweep where sweep_id = :sweep"

# One recorded provenance per model and node stands for the rest (they differ only in
# host-level facts that these keys already separate).
PROVENANCE_SQL = (
    "select model_id, node, min(provenance_json) as low, max(provenance_json) as high"
    " from trial where sweep_id = :sweep and status = 'done'"
    " group by model_id, node"
)


def sweep_record(conn: Connection, sweep_id: str) -> Any | None:
    """The sweep's `name` and `spec_json`, or None when there is no such sweep."""
    return conn.execute(text(SWEEP_SQL), {"sweep": sweep_id}).first()


def skips_left_cassette(conn: Connection, sweep_id: str) -> bool:
    """Whether the sweep leaves trials that left their cassette out of its rates (its
    `left_cassette: exclude`; sweeps recorded before the option count them)."""
    sweep = sweep_record(conn, sweep_id)
    if sweep is None:
        return False
    return bool(json.loads(sweep.spec_json).get("left_cassette") == "exclude")


def provenance_samples(conn: Connection, sweep_id: str) -> Sequence[Any]:
    """Per model and node of the done trials: the lowest and highest provenance JSON."""
    return conn.execute(text(PROVENANCE_SQL), {"sweep": sweep_id}).all()


# One trial per prompt config stands for its payload: a config's prompt (and so its `select:`)
# is the same in every trial of a sweep.
PROMPT_SAMPLES_SQL = (
    "select prompt_id, min(trial_id) as trial_id from trial where sweep_id = :sweep"
    " group by prompt_id"
)
PAYLOAD_SQL = "select payload_json from trial where trial_id = :trial"


def prompt_payloads(conn: Connection, sweep_id: str) -> dict[str, str]:
    """Per prompt config (its label) of the sweep, the payload JSON of one of its trials."""
    found = {}
    for row in conn.execute(text(PROMPT_SAMPLES_SQL), {"sweep": sweep_id}):
        payload = conn.execute(text(PAYLOAD_SQL), {"trial": row.trial_id}).scalar_one()
        found[str(row.prompt_id)] = str(payload)
    return found


# Only the configs that select tools are read; their recall is in each trial's provenance.
SELECTION_SQL = text(
    f"""select model_id, {CONFIG} as config, prompt_id, outcome, provenance_json from trial
where sweep_id = :sweep and status = 'done' and prompt_id in :prompts
  and outcome not in ({", ".join(repr(o) for o in UNGRADED)})
  and (not :skip_left or not left_cassette)
order by model_id, config"""
).bindparams(bindparam("prompts", expanding=True))


def selection_trials(
    conn: Connection, sweep_id: str, prompts: list[str], skip_left: bool
) -> Sequence[Any]:
    """(model_id, config, prompt_id, outcome, provenance_json) of the graded trials of these
    prompt configs; those that left their cassette only when `skip_left` is false."""
    if not prompts:
        return []
    params = {"sweep": sweep_id, "prompts": prompts, "skip_left": skip_left}
    return conn.execute(SELECTION_SQL, params).all()


# Trials of tool-list levels (a configuration label with `@tools=`): where their expected
# tools sat in the list is in each trial's provenance (`tool_positions`).
LEVEL_SQL = text(
    f"""select model_id, {CONFIG} as config, outcome, provenance_json, tokens_prompt from trial
where sweep_id = :sweep and status = 'done' and prompt_id like '%@tools=%'
  and outcome not in ({", ".join(repr(o) for o in UNGRADED)})
  and (not :skip_left or not left_cassette)
order by model_id, config"""
)


def level_trials(conn: Connection, sweep_id: str, skip_left: bool) -> Sequence[Any]:
    """(model_id, config, outcome, provenance_json, tokens_prompt) of the graded trials of
    tool-list levels;
    those that left their cassette only when `skip_left` is false."""
    return conn.execute(LEVEL_SQL, {"sweep": sweep_id, "skip_left": skip_left}).all()
