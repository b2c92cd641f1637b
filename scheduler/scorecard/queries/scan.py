"""A sweep's trials read for its scorecard: the counts behind every rate, the latency samples
behind every percentile, and how many trials are not done yet.

Counts are grouped per model × prompt × scenario × tier × expected tools × wording × whether
the trial left its cassette × outcome; with them, how many trials had a failed call and how many
of those recovered, so recovery is counted per row in the same scan.
On PostgreSQL that one GROUP BY also gathers each group's latency samples (array_agg, fetched in
binary) and, with `done` in its key, counts the unfinished trials, so a million-trial sweep is
scanned once rather than three times. SQLite has no array_agg: there the counts, the samples
(row by row) and the unfinished count are three queries, which the embedded mode's sweeps can
afford. Both give the same groups and the same samples.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import text
from sqlalchemy.engine import Connection

from mcp_farm.scheduler.scorecard.latency import Samples
from mcp_farm.scheduler.scorecard.queries.columns import CONFIG
from mcp_farm.scheduler.scorecard.queries.pg_arrays import fetch_with_arrays
from mcp_farm.schema import UNGRADED

_SUMS = """count(*) as n,
       sum(case when first_try then 1 else 0 end) as first_tries,
       sum(case when first_try is null then 0 else 1 end) as first_known,
       sum(tokens_prompt) as tokens_prompt, sum(tokens_completion) as tokens_completion,
       sum(case when tokens_measured then 1 else 0 end) as tokens_measured,
       sum(case when model_s > 0 and tokens_completion > 0 then tokens_completion else 0 end)
         as timed_tokens,
       sum(case when model_s > 0 and tokens_completion > 0 then model_s else 0 end) as timed_s,
       sum(case when stop_reason = 'model_time_limit' then 1 else 0 end) as model_timeouts,
       count(recovered) as errored,
       sum(case when recovered then 1 else 0 end) as recovered,
       count(state_passed) as probed,
       sum(case when state_passed then 1 else 0 end) as state_passes,
       sum(case when other_path then 1 else 0 end) as other_paths"""
_KEY = f"model_id, {CONFIG}, scenario_id, tier, expected_tools, variant > 0, left_cassette"
# A trial's latency counts when it was graded: done, and neither an infrastructure error nor
# a bug in the farm.
_GRADED = f"status = 'done' and outcome not in ({', '.join(repr(o) for o in UNGRADED)})"

COUNTS_SQL = f"""
select model_id, {CONFIG} as prompt_id, scenario_id, tier, expected_tools,
       variant > 0 as paraphrased, left_cassette, outcome, {_SUMS}
from trial
where sweep_id = :sweep and status = 'done'
group by {_KEY}, outcome
"""
NOT_DONE_SQL = "select count(*) from trial where sweep_id = :sweep and status <> 'done'"
SAMPLES_SQL = f"""
select model_id, {CONFIG} as prompt_id, tier, scenario_id, variant > 0 as para, latency_s,
       first_token_s, left_cassette
from trial where sweep_id = :sweep and {_GRADED}
"""

# PostgreSQL: the three above in one scan. Which groups were graded is read from their keys
# (done, outcome), not tested on every row. NULL samples are left out of the arrays (numpy
# would drop them as NaN anyway), so arrays arrive without NULLs and load in one step.
SCAN_SQL = f"""
select model_id, {CONFIG} as prompt_id, scenario_id, tier, expected_tools,
       variant > 0 as paraphrased, left_cassette, status = 'done' as done, outcome, {_SUMS},
       array_agg(latency_s) filter (where latency_s is not null) as latency,
       array_agg(first_token_s) filter (where first_token_s is not null) as first_token
from trial
where sweep_id = %(sweep)s
group by {_KEY}, status = 'done', outcome
"""


@dataclass(frozen=True)
class TrialScan:
    """What the scorecard reads from a sweep's trials."""

    counts: Sequence[Any]
    """Rows with COUNTS_SQL's columns: one per group of done trials."""
    samples: list[Samples]
    not_done: int


def scan_trials(conn: Connection, sweep_id: str, *, skip_left: bool = False) -> TrialScan:
    """The counts, latency samples and unfinished count of one sweep's trials. `skip_left`:
    trials that left their cassette give no latency sample (the counts say which they are)."""
    if conn.dialect.name == "postgresql":
        return _scan_postgres(conn, sweep_id, skip_left)
    params = {"sweep": sweep_id}
    counts = conn.execute(text(COUNTS_SQL), params).all()
    not_done = conn.execute(text(NOT_DONE_SQL), params).scalar_one()
    found: dict[tuple[str, str, str, str, bool], tuple[list[float], list[float]]] = defaultdict(
        lambda: ([], [])
    )
    for r in conn.execute(text(SAMPLES_SQL), params):
        if skip_left and r.left_cassette:
            continue
        latency, first_token = found[(r.model_id, r.prompt_id, r.tier, r.scenario_id, r.para)]
        latency.append(np.nan if r.latency_s is None else r.latency_s)
        first_token.append(np.nan if r.first_token_s is None else r.first_token_s)
    samples = [Samples(*key, np.array(a), np.array(b)) for key, (a, b) in found.items()]
    return TrialScan(counts=counts, samples=samples, not_done=int(not_done))


def _scan_postgres(conn: Connection, sweep_id: str, skip_left: bool) -> TrialScan:
    # The planner multiplies the key columns' distinct counts into hundreds of thousands of
    # groups (a sweep has thousands), budgets 8 kB per array_agg group, and sorts the whole
    # sweep to aggregate it: 2.6 s instead of 0.8 s for a million trials. Hash aggregation
    # spills to disk should a sweep ever have that many groups; this transaction only.
    conn.execute(text("set local enable_sort = off"))
    counts: list[Any] = []
    samples: list[Samples] = []
    not_done = 0
    for r in fetch_with_arrays(conn, SCAN_SQL, {"sweep": sweep_id}):
        if not r.done:
            not_done += r.n
            continue
        counts.append(r)
        # As _GRADED reads it in SQL, where a NULL outcome is not graded either.
        if r.outcome is not None and r.outcome not in UNGRADED:
            if skip_left and r.left_cassette:
                continue
            samples.append(
                Samples(
                    r.model_id,
                    r.prompt_id,
                    r.tier,
                    r.scenario_id,
                    r.paraphrased,
                    np.empty(0) if r.latency is None else r.latency,
                    np.empty(0) if r.first_token is None else r.first_token,
                )
            )
    return TrialScan(counts=counts, samples=samples, not_done=not_done)
