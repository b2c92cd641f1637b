"""Latency percentiles and histograms of a sweep, per scorecard row.

PostgreSQL computes percentiles itself (percentile_cont over grouping sets: one scan for all
row kinds). SQLite has no percentile function; there the samples come back and numpy computes
the same linear interpolation. tests/scheduler/test_scorecard.py holds the two paths equal.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence

from sqlalchemy import text
from sqlalchemy.engine import Connection

from scheduler.stats import percentiles
from schema.scorecard import Latency, ToolCalls

Key = tuple[str, str, str, str]
"""(dimension, model, prompt, key) of a scorecard row."""

LATENCY_BINS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 60.0, 120.0, 300.0)
QUANTILES = (0.5, 0.95, 0.99)

GRADED = "sweep_id = :sweep and status = 'done' and outcome <> 'infra_error'"

PG_TRIALS = f"""
with t as (
  select model_id, prompt_id, tier, scenario_id, variant > 0 as para, latency_s, first_token_s
  from trial where {GRADED}
)
select model_id, prompt_id, tier, scenario_id, para,
       grouping(tier) as gt, grouping(scenario_id) as gs, grouping(para) as gp,
       count(latency_s) as n,
       percentile_cont(array[0.5, 0.95, 0.99]) within group (order by latency_s) as q,
       count(first_token_s) as fn,
       percentile_cont(array[0.5, 0.95, 0.99]) within group (order by first_token_s) as fq
from t
group by grouping sets ((model_id, prompt_id), (model_id, prompt_id, tier),
                        (model_id, prompt_id, scenario_id), (model_id, prompt_id, para))
"""

SAMPLE_TRIALS = f"""
select model_id, prompt_id, tier, scenario_id, variant > 0 as para, latency_s, first_token_s
from trial where {GRADED}
"""

PG_CALLS = """
select t.model_id, t.prompt_id, c.tool, count(*) as calls,
       sum(case when c.ok then 1 else 0 end) as ok, count(c.latency_s) as n,
       percentile_cont(array[0.5, 0.95, 0.99]) within group (order by c.latency_s) as q
from tool_call c join trial t on t.trial_id = c.trial_id
where t.sweep_id = :sweep
group by t.model_id, t.prompt_id, c.tool
"""

SAMPLE_CALLS = """
select t.model_id, t.prompt_id, c.tool, c.ok, c.latency_s
from tool_call c join trial t on t.trial_id = c.trial_id
where t.sweep_id = :sweep
"""


def _latency(n: int, q: Sequence[float | None] | None) -> Latency:
    if not n or q is None:
        return Latency(n=n)
    p50, p95, p99 = (None if v is None or math.isnan(v) else float(v) for v in q)
    return Latency(n=n, p50=p50, p95=p95, p99=p99)


def _from_samples(samples: Sequence[float]) -> Latency:
    return _latency(len(samples), percentiles(samples) if samples else None)


def _row_keys(model: str, prompt: str, tier: str, scenario: str, para: object) -> list[Key]:
    wording = "paraphrased" if para else "verbatim"
    return [
        ("config", model, prompt, ""),
        ("tier", model, prompt, tier),
        ("scenario", model, prompt, scenario),
        ("phrasing", model, prompt, wording),
    ]


def trial_latency(
    conn: Connection, sweep_id: str
) -> tuple[dict[Key, Latency], dict[tuple[str, str], Latency]]:
    """Trial latency per row key, and time to first token per model × prompt."""
    params = {"sweep": sweep_id}
    latency: dict[Key, Latency] = {}
    first: dict[tuple[str, str], Latency] = {}
    if conn.dialect.name == "postgresql":
        for r in conn.execute(text(PG_TRIALS), params):
            if not r.gt:
                key: Key = ("tier", r.model_id, r.prompt_id, r.tier)
            elif not r.gs:
                key = ("scenario", r.model_id, r.prompt_id, r.scenario_id)
            elif not r.gp:
                wording = "paraphrased" if r.para else "verbatim"
                key = ("phrasing", r.model_id, r.prompt_id, wording)
            else:
                key = ("config", r.model_id, r.prompt_id, "")
                first[(r.model_id, r.prompt_id)] = _latency(r.fn, r.fq)
            latency[key] = _latency(r.n, r.q)
        return latency, first
    samples: dict[Key, list[float]] = defaultdict(list)
    ttft: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in conn.execute(text(SAMPLE_TRIALS), params):
        for key in _row_keys(r.model_id, r.prompt_id, r.tier, r.scenario_id, r.para):
            if r.latency_s is not None:
                samples[key].append(r.latency_s)
        if r.first_token_s is not None:
            ttft[(r.model_id, r.prompt_id)].append(r.first_token_s)
    latency = {key: _from_samples(values) for key, values in samples.items()}
    first = {key: _from_samples(values) for key, values in ttft.items()}
    return latency, first


def tool_calls(conn: Connection, sweep_id: str) -> list[ToolCalls]:
    """Every tool as called by each model × prompt: calls, successes, call latency."""
    params = {"sweep": sweep_id}
    if conn.dialect.name == "postgresql":
        found = [
            ToolCalls(
                model=r.model_id,
                prompt=r.prompt_id,
                tool=r.tool,
                calls=r.calls,
                ok=r.ok or 0,
                latency=_latency(r.n, r.q),
            )
            for r in conn.execute(text(PG_CALLS), params)
        ]
    else:
        groups: dict[tuple[str, str, str], list[tuple[bool, float]]] = defaultdict(list)
        for r in conn.execute(text(SAMPLE_CALLS), params):
            groups[(r.model_id, r.prompt_id, r.tool)].append((bool(r.ok), r.latency_s))
        found = [
            ToolCalls(
                model=m,
                prompt=p,
                tool=tool,
                calls=len(calls),
                ok=sum(1 for ok, _ in calls if ok),
                latency=_from_samples([s for _, s in calls if s is not None]),
            )
            for (m, p, tool), calls in groups.items()
        ]
    return sorted(found, key=lambda c: (c.model, c.prompt, c.tool))


def _bin_case(edges: Iterable[float]) -> str:
    whens = " ".join(f"when latency_s <= {edge!r} then {i}" for i, edge in enumerate(edges))
    return f"case {whens} else {len(LATENCY_BINS)} end"


def histograms(conn: Connection, sweep_id: str) -> dict[tuple[str, str], list[int]]:
    """Trial latency counts per LATENCY_BINS bin, per model × prompt (one GROUP BY)."""
    sql = (
        f"select model_id, prompt_id, {_bin_case(LATENCY_BINS)} as bin, count(*) as n"
        f" from trial where {GRADED} and latency_s is not null"
        " group by model_id, prompt_id, bin"
    )
    found: dict[tuple[str, str], list[int]] = {}
    for r in conn.execute(text(sql), {"sweep": sweep_id}):
        counts = found.setdefault((r.model_id, r.prompt_id), [0] * (len(LATENCY_BINS) + 1))
        counts[r.bin] = r.n
    return found
