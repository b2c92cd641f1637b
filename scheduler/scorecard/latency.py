"""Latency percentiles and histograms of a sweep, per scorecard row.

The scan of the sweep's trials (scheduler/scorecard/queries/scan.py) gives the samples of
every (model, prompt, tier, scenario, wording); the config, tier, scenario and wording rows are
unions of those, and numpy computes the percentiles (linear interpolation, as PostgreSQL's
percentile_cont). tests/scheduler/scorecard/test_scorecard.py holds PostgreSQL and SQLite to
the same numbers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mcp_farm.scheduler.scorecard.queries.tool_calls import (
    grouped_calls,
    single_calls,
)
from mcp_farm.scheduler.statistics.rates import percentiles
from mcp_farm.schema.scorecard import (
    Latency,
    ToolCalls,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

Key = tuple[str, str, str, str]
"""(dimension, model, prompt, key) of a scorecard row."""

LatencyParts = tuple[
    dict[Key, Latency], dict[tuple[str, str], Latency], dict[tuple[str, str], list[int]]
]
"""Trial latency per row key; time to first token and the histogram per (model, prompt)."""

LATENCY_BINS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 60.0, 120.0, 300.0)


@dataclass(frozen=True)
class Samples:
    """Latency samples of graded trials that share model, prompt config, tier, scenario and
    wording (NaN for a trial that has none)."""

    model: str
    prompt: str
    tier: str
    scenario: str
    para: bool
    latency: np.ndarray
    first_token: np.ndarray


def _from_samples(parts: Sequence[np.ndarray]) -> Latency:
    """Percentiles over the union of sample arrays (missing values are NaN and left out)."""
    values = np.concatenate(parts) if parts else np.empty(0)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return Latency()
    p50, p95, p99 = percentiles(values)
    return Latency(n=int(values.size), p50=p50, p95=p95, p99=p99)


def _array(values: Sequence[float | None]) -> np.ndarray:
    return np.array(values, dtype=float)  # None becomes NaN


def row_keys(
    model: str, prompt: str, tier: str, scenario: str, para: object, tools: Sequence[str] = ()
) -> list[Key]:
    """Every scorecard row a trial belongs to: its config, tier, scenario, wording, and each
    tool it expects (once per tool)."""
    wording = "paraphrased" if para else "verbatim"
    return [
        ("config", model, prompt, ""),
        ("tier", model, prompt, tier),
        ("scenario", model, prompt, scenario),
        ("phrasing", model, prompt, wording),
        *(("tool", model, prompt, tool) for tool in dict.fromkeys(tools)),
    ]


def trial_latency(found: Iterable[Samples]) -> LatencyParts:
    """Trial latency per row key; time to first token and the latency histogram per model ×
    prompt."""
    samples: dict[Key, list[np.ndarray]] = defaultdict(list)
    ttft: dict[tuple[str, str], list[np.ndarray]] = defaultdict(list)
    for s in found:
        for key in row_keys(s.model, s.prompt, s.tier, s.scenario, s.para):
            samples[key].append(s.latency)
        ttft[(s.model, s.prompt)].append(s.first_token)
    return (
        {key: _from_samples(values) for key, values in samples.items()},
        {key: _from_samples(values) for key, values in ttft.items()},
        {key[1:3]: histogram(values) for key, values in samples.items() if key[0] == "config"},
    )


def tool_calls(conn: Connection, sweep_id: str) -> list[ToolCalls]:
    """Every tool as called by each model × prompt: calls, successes, call latency."""
    groups: dict[tuple[str, str, str], list[np.ndarray]] = defaultdict(list)
    totals: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    grouped = conn.dialect.name == "postgresql"
    rows = grouped_calls(conn, sweep_id) if grouped else single_calls(conn, sweep_id)
    for r in rows:
        key = (r.model_id, r.prompt_id, r.tool)
        groups[key].append(r.latency if grouped else _array([r.latency_s]))
        totals[key][0] += r.calls
        totals[key][1] += r.ok or 0
    return [
        ToolCalls(
            model=m,
            prompt=p,
            tool=tool,
            calls=totals[(m, p, tool)][0],
            ok=totals[(m, p, tool)][1],
            latency=_from_samples(groups[(m, p, tool)]),
        )
        for m, p, tool in sorted(groups)
    ]


def histogram(parts: Sequence[np.ndarray]) -> list[int]:
    """Counts per LATENCY_BINS bin (upper edges inclusive; the last bin is open)."""
    values = np.concatenate(parts) if parts else np.empty(0)
    values = values[~np.isnan(values)]
    bins = np.searchsorted(np.asarray(LATENCY_BINS), values, side="left")
    return [int(n) for n in np.bincount(bins, minlength=len(LATENCY_BINS) + 1)]
