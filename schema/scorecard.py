"""The scorecard contract: what the aggregator stores and `farm report --format json` prints.

Versioned: a change to these models bumps SCORECARD_VERSION, and docs/scorecard.schema.json is
regenerated from them (a test holds the published file equal to the models).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCORECARD_VERSION = 2

Dimension = Literal["config", "tool", "tier", "scenario", "phrasing"]
DIMENSIONS: tuple[Dimension, ...] = ("config", "tool", "tier", "scenario", "phrasing")


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Latency(Frozen):
    """Percentiles in seconds (linear interpolation); null where there was no sample."""

    n: int = 0
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None


class Row(Frozen):
    """One group of trials of one model × prompt config: all of them (`config`), or those
    expecting one tool, of one tier, of one scenario, or of one wording (`phrasing`)."""

    dimension: Dimension
    model: str
    prompt: str
    key: str = ""
    """The tool, tier, scenario id, or `verbatim`/`paraphrased`; empty for `config`."""
    n: int
    passes: int
    rate: float | None
    """passes / n; null when n is 0."""
    low: float
    high: float
    """Wilson 95% interval of the pass rate."""
    k: int
    """Repetitions per scenario used for pass^k and pass@k (the fewest any scenario here had)."""
    pass_hat_k: float | None
    """Chance that all k repetitions of a scenario pass, averaged over scenarios (unbiased)."""
    pass_at_k: float | None
    """Chance that at least one of k repetitions passes, averaged over scenarios (unbiased)."""
    latency: Latency
    """Trial latency; for `tool` rows, the latency of that tool's calls."""
    outcomes: dict[str, int] = Field(default_factory=dict)
    """Trials per outcome (the failure modes, and `pass`)."""


class ConfigExtras(Frozen):
    """What only makes sense per model × prompt config: speed and tokens."""

    model: str
    prompt: str
    first_token: Latency
    """Time to first token, where the endpoint reports it."""
    tokens_per_s: float | None
    """Completion tokens over time spent in the model, where both are known."""
    tokens_prompt: int
    tokens_completion: int
    """Tokens by phase, summed over the config's trials."""
    histogram: list[int]
    """Trial latency counts per bin of `Scorecard.latency_bins`."""


class ToolCalls(Frozen):
    """Calls of one tool as executed by one config (whether or not expected)."""

    model: str
    prompt: str
    tool: str
    calls: int
    ok: int
    latency: Latency


class Provenance(Frozen):
    """What the scorecard was built from and by."""

    sweep_name: str
    spec_json: str
    """The sweep file as submitted (with its gates)."""
    farm_versions: list[str]
    git_commits: list[str]
    nodes: list[str]
    model_pins: dict[str, dict[str, str]]
    aggregator_version: str


class Scorecard(Frozen):
    schema_version: int = SCORECARD_VERSION
    sweep_id: str
    built_at: str
    total: int
    done: int
    """Trials recorded (infra errors included); rates exclude infra errors."""
    rows: list[Row]
    extras: list[ConfigExtras]
    tool_calls: list[ToolCalls]
    latency_bins: list[float]
    """Upper edges (seconds) of the latency histogram bins; the last bin is open."""
    provenance: Provenance

    def of(self, dimension: Dimension) -> list[Row]:
        return [r for r in self.rows if r.dimension == dimension]


def rate_or_nan(value: float | None) -> float:
    return math.nan if value is None else value


if __name__ == "__main__":
    # The published schema: python -m schema.scorecard > docs/scorecard.schema.json
    import json

    print(json.dumps(Scorecard.model_json_schema(), indent=2))
