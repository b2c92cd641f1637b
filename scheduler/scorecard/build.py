"""Build a sweep's scorecard from its stored trials: grouped in SQL, finished with numpy.

Counts (per model × prompt × scenario × tier × wording × outcome) come from one GROUP BY, so
every rate, interval, pass^k and failure count is computed from a few thousand rows however big
the sweep; on PostgreSQL the same scan brings each group's latency samples (queries/scan.py).
numpy computes the percentiles from the samples (latency.py), as PostgreSQL's percentile_cont.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from mcp_farm.scheduler.scorecard.answers import answer_quality
from mcp_farm.scheduler.scorecard.conversations import conversations
from mcp_farm.scheduler.scorecard.latency import (
    LATENCY_BINS,
    Key,
    LatencyParts,
    row_keys,
    tool_calls,
    trial_latency,
)
from mcp_farm.scheduler.scorecard.queries.parallel import run_queries
from mcp_farm.scheduler.scorecard.queries.provenance import (
    provenance_samples,
    skips_left_cassette,
    sweep_record,
)
from mcp_farm.scheduler.scorecard.queries.scan import (
    TrialScan,
    scan_trials,
)
from mcp_farm.scheduler.scorecard.robustness import curves, level_facts, threshold_of
from mcp_farm.scheduler.scorecard.selection import selection_recall
from mcp_farm.scheduler.scorecard.usersim import simulated_users
from mcp_farm.scheduler.statistics.rates import (
    first_try_rate,
    pass_at_k,
    pass_hat_k,
    wilson,
)
from mcp_farm.schema import OUTCOMES, UNGRADED
from mcp_farm.schema.scorecard import (
    ConfigExtras,
    Latency,
    Provenance,
    Row,
    Scorecard,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

TIERS = ("simple", "moderate", "complex")
AGGREGATOR_VERSION = "5"


@dataclass
class _Group:
    """Counts gathered for one row of the scorecard."""

    outcomes: Counter[str] = field(default_factory=Counter)
    per_scenario: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    first_tries: int = 0
    first_known: int = 0
    """Graded trials that carry a first-try record (older trials do not)."""
    errored: int = 0
    recovered: int = 0
    """Graded trials with a failed call, and those of them that recovered."""
    probed: int = 0
    state_passes: int = 0
    other_paths: int = 0
    """Graded trials with state probes, those whose probes all fit, those flagged other_path."""

    def add(self, scenario: str, outcome: str, counts: Any) -> None:
        """Add one group of the scan (COUNTS_SQL's columns) of this scenario and outcome."""
        self.outcomes[outcome] += counts.n
        if outcome not in UNGRADED:
            tally = self.per_scenario[scenario]
            tally[0] += counts.n
            tally[1] += counts.n if outcome == "pass" else 0
            self.first_tries += int(counts.first_tries or 0)
            self.first_known += int(counts.first_known or 0)
            self.errored += int(counts.errored or 0)
            self.recovered += int(counts.recovered or 0)
            self.probed += int(counts.probed or 0)
            self.state_passes += int(counts.state_passes or 0)
            self.other_paths += int(counts.other_paths or 0)


def _row(key: Key, group: _Group, latency: Latency) -> Row:
    dimension, model, prompt, name = key
    n = sum(v[0] for v in group.per_scenario.values())
    passes = sum(v[1] for v in group.per_scenario.values())
    low, high = wilson(passes, n)
    scenario_counts = [v for v in group.per_scenario.values() if v[0] > 0]
    k = min((v[0] for v in scenario_counts), default=0)
    hats = [pass_hat_k(sn, sc, k) for sn, sc in scenario_counts]
    ats = [pass_at_k(sn, sc, k) for sn, sc in scenario_counts]
    return Row(
        dimension=dimension,
        model=model,
        prompt=prompt,
        key=name,
        n=n,
        passes=passes,
        rate=passes / n if n else None,
        low=low,
        high=high,
        k=k,
        pass_hat_k=sum(hats) / len(hats) if hats else None,
        pass_at_k=sum(ats) / len(ats) if ats else None,
        first_passes=group.first_tries,
        first_rate=first_try_rate(n, group.first_tries, group.first_known),
        latency=latency,
        outcomes={o: group.outcomes[o] for o in OUTCOMES if group.outcomes[o]},
        errored=group.errored,
        recovered=group.recovered,
        recovery_rate=group.recovered / group.errored if group.errored else None,
        probed=group.probed,
        state_passes=group.state_passes,
        state_rate=group.state_passes / group.probed if group.probed else None,
        other_path=group.other_paths,
    )


def _order(row: Row) -> tuple[Any, ...]:
    tier = TIERS.index(row.key) if row.dimension == "tier" and row.key in TIERS else 0
    return (row.dimension, row.model, row.prompt, tier, row.key)


def build_scorecard(
    *,
    engine: Engine,
    sweep_id: str,
    scoring: str | None = None,
    left_cassette: Literal["count", "exclude"] | None = None,
) -> Scorecard:
    """Compute the scorecard of one sweep from its stored trials. Rates exclude infra errors,
    and trials that left their cassette when `left_cassette` (by default the sweep's own
    setting) says `exclude`."""
    if left_cassette is None:
        with engine.connect() as conn:
            skip_left = skips_left_cassette(conn, sweep_id)
    else:
        skip_left = left_cassette == "exclude"
    # The queries are independent: on PostgreSQL they run side by side on their own
    # connections (one scan of the trials, one of the tool calls); SQLite runs them in turn.
    parts = run_queries(
        engine,
        {
            "trials": lambda c: _trials(c, sweep_id, skip_left),
            "calls": lambda c: tool_calls(c, sweep_id),
            "provenance": lambda c: _provenance(c, sweep_id),
            "answers": lambda c: answer_quality(c, sweep_id, scoring),
            "conversations": lambda c: conversations(c, sweep_id, skip_left),
            "users": lambda c: simulated_users(c, sweep_id, skip_left),
            "threshold": lambda c: threshold_of(_spec_json(c, sweep_id)),
            "selection": lambda c: selection_recall(c, sweep_id, skip_left),
            "levels": lambda c: level_facts(c, sweep_id, skip_left),
        },
    )
    scan, (latency, first_token, hist) = parts["trials"]
    counts = scan.counts
    calls, provenance = parts["calls"], parts["provenance"]
    total = sum(r.n for r in counts) + scan.not_done

    groups: dict[Key, _Group] = defaultdict(_Group)
    # prompt, completion, timed completion tokens, timed seconds, trials that measured them
    # (a trial that did not, an agent's, adds 0 to the sums and nothing to the count).
    tokens: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0, 0, 0.0, 0])
    timeouts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    left: Counter[tuple[str, str]] = Counter()
    done = 0
    for r in counts:
        done += r.n
        m, p = r.model_id, r.prompt_id
        sums = tokens[(m, p)]
        sums[0] += r.tokens_prompt or 0
        sums[1] += r.tokens_completion or 0
        sums[2] += r.timed_tokens or 0
        sums[3] += float(r.timed_s or 0.0)
        sums[4] += r.tokens_measured or 0
        if r.left_cassette:
            left[(m, p)] += r.n
            if skip_left:
                continue
        tools = json.loads(r.expected_tools)
        for key in row_keys(m, p, r.tier, r.scenario_id, r.paraphrased, tools):
            groups[key].add(r.scenario_id, r.outcome, r)
        if r.outcome == "timeout":
            by_model = int(r.model_timeouts or 0)
            timeouts[(m, p)]["model_reply"] += by_model
            timeouts[(m, p)]["scenario_clock"] += r.n - by_model

    call_latency = {(c.model, c.prompt, c.tool): c.latency for c in calls}
    rows = []
    for key, group in groups.items():
        if key[0] == "tool":
            lat = call_latency.get((key[1], key[2], key[3]), Latency())
        else:
            lat = latency.get(key, Latency())
        rows.append(_row(key, group, lat))
    extras = [
        ConfigExtras(
            model=m,
            prompt=p,
            first_token=first_token.get((m, p), Latency()),
            tokens_per_s=sums[2] / sums[3] if sums[3] > 0 else None,
            tokens_prompt=int(sums[0]) if sums[4] else None,
            tokens_completion=int(sums[1]) if sums[4] else None,
            histogram=hist.get((m, p), [0] * (len(LATENCY_BINS) + 1)),
            timeouts={k: n for k, n in sorted(timeouts[(m, p)].items()) if n},
            left_cassette=left[(m, p)],
        )
        for (m, p), sums in sorted(tokens.items())
    ]
    return Scorecard(
        sweep_id=sweep_id,
        built_at=datetime.now(UTC).isoformat(timespec="seconds"),
        total=total,
        done=done,
        rows=sorted(rows, key=_order),
        robustness=curves(rows, parts["threshold"], parts["levels"][1]),
        positions=parts["levels"][0],
        selection=parts["selection"],
        extras=extras,
        tool_calls=calls,
        latency_bins=list(LATENCY_BINS),
        provenance=provenance,
        answers=parts["answers"],
        conversations=parts["conversations"][0],
        turns=parts["conversations"][1],
        simulated_users=parts["users"],
        left_cassette="exclude" if skip_left else "count",
    )


def _trials(conn: Connection, sweep_id: str, skip_left: bool) -> tuple[TrialScan, LatencyParts]:
    scan = scan_trials(conn, sweep_id, skip_left=skip_left)
    # Percentiles here, on this query's thread, overlap the tool calls' query still running.
    return scan, trial_latency(scan.samples)


def _spec_json(conn: Connection, sweep_id: str) -> str | None:
    found = sweep_record(conn, sweep_id)
    return str(found.spec_json) if found is not None else None


def _distinct(values: Iterable[str | None]) -> list[str]:
    return sorted({v for v in values if v})


def _provenance(conn: Connection, sweep_id: str) -> Provenance:
    sweep = sweep_record(conn, sweep_id)
    samples = provenance_samples(conn, sweep_id)
    recorded = [json.loads(s.low) for s in samples] + [json.loads(s.high) for s in samples]
    pins = {s.model_id: json.loads(s.low).get("model_pins", {}) for s in samples}
    return Provenance(
        sweep_name=sweep.name if sweep else "",
        spec_json=sweep.spec_json if sweep else "{}",
        farm_versions=_distinct(r.get("farm_version") for r in recorded),
        git_commits=_distinct(r.get("git_commit") for r in recorded),
        nodes=_distinct(s.node for s in samples),
        model_pins=pins,
        aggregator_version=AGGREGATOR_VERSION,
    )


def overall_pass_rate(card: Scorecard) -> float:
    rows = card.of("config")
    n = sum(r.n for r in rows)
    return sum(r.passes for r in rows) / n if n else float("nan")


def outcome_columns(card: Scorecard) -> list[str]:
    """The outcomes that occur in the sweep, in taxonomy order."""
    seen = {o for r in card.of("config") for o in r.outcomes}
    return [o for o in OUTCOMES if o in seen]
