"""The scorecard's rows: pass rates per group of trials, speed and tokens per config, calls
per tool, and what the card was built from."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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
    first_passes: int = 0
    """Passes in which every call of an expected tool did a step and none was repeated: the
    right call came first, with no wrong attempt before or after it."""
    first_rate: float | None = None
    """first_passes / n: the first-try pass rate; null when n is 0 or some trial here was
    recorded before first tries were kept."""
    latency: Latency
    """Trial latency; for `tool` rows, the latency of that tool's calls."""
    outcomes: dict[str, int] = Field(default_factory=dict)
    """Trials per outcome (the failure modes, and `pass`)."""
    errored: int = 0
    """Graded trials in which some call got an error result (the server's `isError`, its
    `error_pattern`, or arguments it refused)."""
    recovered: int = 0
    """Of those, the trials in which every failed call was followed by a successful call that
    did a step: the model recovered instead of giving up."""
    recovery_rate: float | None = None
    """recovered / errored: the recovery rate; null when no call failed."""
    probed: int = 0
    """Graded trials with `state:` probes (docs/state.md)."""
    state_passes: int = 0
    """Of those, the trials whose probes all fit."""
    state_rate: float | None = None
    """state_passes / probed: the state pass rate, beside the pass rate; null without probes.
    Disagreement: `outcomes["wrong_state"]` (calls passed, state did not) and `other_path`."""
    other_path: int = 0
    """Trials whose state passed while their calls did not (another path to the same state);
    their outcome is the calls' own."""


class ConfigExtras(Frozen):
    """What only makes sense per model × prompt config: speed and tokens."""

    model: str
    prompt: str
    first_token: Latency
    """Time to first token, where the endpoint reports it."""
    tokens_per_s: float | None
    """Completion tokens over time spent in the model, where both are known."""
    tokens_prompt: int | None
    tokens_completion: int | None
    """Tokens by phase, summed over the config's trials that measured them; None, "not
    measured", where none did (an agent whose model calls did not pass the farm)."""
    histogram: list[int]
    """Trial latency counts per bin of `Scorecard.latency_bins`."""
    timeouts: dict[str, int] = Field(default_factory=dict)
    """Timed-out trials by the limit that ended them: `scenario_clock` (tools, servers and
    setup past the scenario's `time_limit_s`) and `model_reply` (one reply past the model's
    `request_timeout_s` × `time_scale`); empty when none timed out."""
    left_cassette: int = 0
    """Trials that called a server replayed from a cassette with a call it never recorded
    (counted in the rows above unless the card's `left_cassette` is `exclude`)."""


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
