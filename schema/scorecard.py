"""The scorecard contract: what the aggregator stores and `farm report --format json` prints.

Versioned: a change to these models bumps SCORECARD_VERSION, and docs/scorecard.schema.json is
regenerated from them (a test holds the published file equal to the models).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCORECARD_VERSION = 20
ANCHOR_THRESHOLD = 0.85
"""The seed's anchor gate: Spearman's ρ a judge must reach against the gold scores. A lock may
set a lower one only when written with `--allow-lower-threshold`, and reports say so."""

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


class Conversations(Frozen):
    """The conversation trials of one model × prompt config, counted turn by turn. A
    conversation passes only if every turn passed on its own; under `on_turn_failure:
    continue` the turns after a failed one are graded too, so the turn rate can be well above
    the conversation rate."""

    model: str
    prompt: str
    conversations: int
    """Graded conversation trials (infrastructure and harness errors left out)."""
    passed: int
    rate: float | None
    """passed / conversations: the conversation pass rate; null when there were none."""
    turns: int
    """Turns graded (turns never reached, after a failure under `stop`, are not counted)."""
    turns_passed: int
    turn_rate: float | None
    """turns_passed / turns: the turn pass rate."""
    first_failing_turn: dict[str, int] = Field(default_factory=dict)
    """Failed conversations by their first failing turn (1-based, as text: `"1"`, `"2"`)."""
    k: int = 0
    """Repetitions per conversation scenario used for pass^k (the fewest any scenario had)."""
    pass_hat_k: float | None = None
    """Chance that all k repetitions of a conversation pass, averaged over the conversation
    scenarios (unbiased); null below k = 1."""
    turn_pass_hat_k: float | None = None
    """Chance that a turn passes in all k repetitions of its conversation, averaged over every
    turn of every conversation scenario that was graded at least once; a repetition that never
    reached the turn (an earlier one failed under `stop`) counts as not passing it."""


class TurnRow(Frozen):
    """One turn of one conversation scenario of one model × prompt config, over the
    repetitions: what JUnit shows as a test case per turn."""

    model: str
    prompt: str
    scenario: str
    turn: int
    """1-based."""
    conversations: int
    """Graded conversation trials of the scenario (the repetitions)."""
    graded: int
    """Those that reached this turn and graded it."""
    passes: int
    outcomes: dict[str, int] = Field(default_factory=dict)
    """Graded turns per outcome."""
    detail: str = ""
    """The grader's detail of the first failed instance (by repetition); empty when none
    failed. Text a model or server wrote may be in it: escape it where shown."""


class UserVariance(Frozen):
    """One config's pass/fail variance split between the agent and the simulated user, from
    agent repetitions crossed with user seeds (`user_model.seeds: m`), by ANOVA expected mean
    squares pooled over scenarios (docs/simulated-user.md, "The user's share")."""

    scenarios: int
    """Scenarios with a complete table of at least 2 repetitions × 2 user seeds."""
    repetitions: int
    """k: agent repetitions per scenario (the most common)."""
    seeds: int
    """m: user seeds per scenario (the most common)."""
    agent: float
    """σ²_agent: the variance between agent repetitions (each against every user seed)."""
    user: float
    """σ²_user: the variance between user seeds (each against every agent repetition)."""
    rest: float
    """σ² of the agent × user interaction and the residual together: with one trial per
    cell the two cannot be told apart."""
    clamped: list[Literal["agent", "user"]] = Field(default_factory=list)
    """Components whose unbiased estimate was negative, shown as 0."""
    user_icc: float | None
    """σ²_user / (σ²_agent + σ²_user + σ²_rest): the share of one trial's outcome variance
    that is which user it met; null when the outcomes never varied."""
    resolution: float
    """The half-width of the config pass rate's 95% interval from these components at
    k × m per scenario over the scenarios: 1.96 · √((σ²_agent/k + σ²_user/m +
    σ²_rest/(k·m)) / S)."""


class SimulatedUsers(Frozen):
    """The trials of one model × prompt config that talked to a simulated user: the pass rate
    over all of them beside the pass rate over those in which the user invented no fact, and
    whose mistake the failures were (docs/simulated-user.md)."""

    model: str
    prompt: str
    trials: int
    """Graded trials with a simulated user (infrastructure and harness errors left out)."""
    passed: int
    rate: float | None
    """passed / trials; null when there were none."""
    clean: int
    """Trials in which no message of the user held a fact not on its card."""
    clean_passed: int
    clean_rate: float | None
    """clean_passed / clean: the pass rate without the user's mistakes."""
    user_failures: int
    """Failed trials whose first critical mistake was the user's (`failure_source: user`)."""
    agent_failures: int
    """Failed trials whose first critical mistake was the agent's."""
    users: list[str] = Field(default_factory=list)
    """The user identities these trials met (UserIdentity.pool_key); more than one means the
    rates pool different users, which every report says."""
    variance: UserVariance | None = None
    """The split of the variance between agent and user; null unless the sweep crossed agent
    repetitions with user seeds (`user_model.seeds` ≥ 2, repetitions ≥ 2)."""


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


class AnswerRow(Frozen):
    """Answer quality of one model × prompt × tool set (`config`), or of one scenario in it.
    Fairness and adoption are separate columns and are never combined."""

    dimension: Literal["config", "scenario"]
    model: str
    prompt: str
    """The configuration label: prompt config, `+tool set` when there is one."""
    toolset: str
    baseline: bool
    key: str = ""
    """The scenario id; empty for `config`."""
    n: int
    """Trials scored."""
    scenarios: int
    fairness: float | None
    """Mean of the scenario-level mean fairness (what rankings use)."""
    fairness_low: float | None
    fairness_high: float | None
    """95% interval (Student t over scenario-level means); null with fewer than 2 scenarios."""
    keyword_coverage: float | None
    judge_quality: float | None
    grounding_rate: float | None
    efficiency: float | None
    adoption: float | None
    """Structurally 0 for the baseline."""
    tool_fluency: float | None
    discoverability: float | None
    grounded: int
    unresolved: int
    hallucinated: int
    tokens_reasoning: int
    tokens_tool_io: int
    tokens_verification: int
    estimated: list[str]
    """Token phases whose counts are estimated, not reported by the endpoint."""
    model_s: float | None
    """Mean seconds per trial spent in the model (judging excluded)."""
    judge_s: float | None
    """Mean seconds per trial spent judging."""


class JudgeVariance(Frozen):
    """How much one judge disagrees with itself across duplicate runs."""

    judge: str
    rubric_id: str
    rubric_hash: str
    trials: int
    runs: int
    unreadable: int
    """Criterion scores the judge's replies did not yield."""
    sigma_criterion: float | None
    sigma_step: float | None
    sigma_scenario: float | None
    """Pooled standard deviation across runs at each level (scores normalised to 0..1)."""
    icc1: float | None
    """ICC(1): the share of score variance that is the transcripts, not the judge."""
    resolution: float | None
    """Per scenario: the smallest difference between two scenario-level means the runs can
    resolve, the two-sided 95% threshold of a t-test that estimates σ from the runs,
    t₀.₉₇₅(2R − 2)·√2·σ_scenario/√R; null below R = 2."""
    resolution_80: float | None = None
    """Per scenario: the difference that t-test finds 80% of the time (noncentral t)."""
    noise_floor: float
    """Criterion-level differences below this are noise, never findings."""
    per_criterion: dict[str, float] = Field(default_factory=dict)
    anchors: Literal["verified", "failed", "unverified"] = "unverified"
    """The drift guard for this judge and rubric (`farm anchors verify`): the latest gate run's
    verdict, read when the report is made, not when the card was built."""
    anchor_rho: float | None = None
    anchor_checked_at: datetime | None = None
    """When that gate run was; null when the gate never ran for this judge and rubric."""
    anchor_folder: str | None = None
    """The anchor folder that gate run verified (the latest run of each folder counts: one that
    failed keeps the judge `failed` whatever another folder says; this names it)."""
    anchor_lock: str | None = None
    """SHA256 of that folder's `anchors.lock` as verified."""
    anchor_threshold: float | None = None
    """The ρ that gate run required (the lock's threshold)."""
    anchor_lowered: bool = False
    """True when that threshold was below the seed's 0.85 (allowed only by
    `farm anchors lock --allow-lower-threshold`): every report says so beside the verdict."""


class Ranked(Frozen):
    """One configuration in the answer-quality ranking (scenario-level means only)."""

    model: str
    prompt: str
    toolset: str
    baseline: bool
    fairness: float | None
    adoption: float | None
    vs_baseline: float | None
    """Fairness minus the baseline's on the same model and prompt; null without one."""


class AnswerQuality(Frozen):
    """The answer-quality layer of a scorecard, from one scoring pass."""

    scoring_id: str
    kind: str
    """`run` or `rescore`."""
    grader_version: str
    judge: str
    """The judge model's id; empty when scored without a judge."""
    weights: dict[str, dict[str, float]]
    rows: list[AnswerRow]
    judges: list[JudgeVariance]
    ranking: list[Ranked]
    verified: bool
    """False when the anchor gate has not passed for the judge and rubric used: the ranking is
    unverified."""

    def of(self, dimension: Literal["config", "scenario"]) -> list[AnswerRow]:
        return [r for r in self.rows if r.dimension == dimension]


class LevelPoint(Frozen):
    """One tool-list level of one configuration: its rates, and the fitted curve there."""

    tool_count: int
    label: str
    """The configuration label of the level (prompt id + `@tools=…,desc=…,names=…`)."""
    n: int
    passes: int
    rate: float | None
    low: float
    high: float
    """Wilson 95% interval of the pass rate."""
    first_rate: float | None
    """First-try pass rate (null where not known)."""
    wrong_tool: int
    """Graded trials whose outcome was `wrong_tool` (a distractor called, among others)."""
    context_overflow: int = 0
    """Graded trials whose prompt (at this level's tool list) did not fit the model's context:
    the model was never asked (`context_overflow`, failures in `n`)."""
    wrong_rate: float | None
    wrong_low: float
    wrong_high: float
    """The wrong-tool rate and its Wilson 95% interval."""
    fitted: float | None
    fitted_low: float | None
    fitted_high: float | None
    """The fitted curve's pass rate at this tool count, with its 95% band."""
    prompt_tokens: float | None = None
    """Mean prompt tokens per graded trial at this level, over those that recorded any: all of
    a trial's model calls together (a first call's own count is not recorded apart); null
    where none did."""


class Curve(Frozen):
    """Pass rate against tool count for one model × prompt × descriptions × names: a logistic
    curve in log2(1 + tool count), its slope with an interval, and where it crosses a threshold
    (docs/robustness.md)."""

    model: str
    prompt: str
    """The prompt config's id, without the level."""
    descriptions: str
    names: str
    points: list[LevelPoint]
    slope: float | None
    """Change of the log-odds of a pass per doubling of (1 + tool count); null with one level."""
    slope_low: float | None
    slope_high: float | None
    """95% Wald interval of the slope."""
    threshold: float
    """The sweep's `tool_list.threshold`."""
    below_at: int | None
    """The smallest tool count whose observed pass rate is below the threshold; null if none."""
    crossing: float | None
    """The tool count at which the fitted curve falls to the threshold; null when it does not
    within the levels measured."""
    tokens_per_tool: float | None = None
    """Prompt tokens each added tool costs: the least-squares slope of the levels'
    `prompt_tokens` against tool count; null with fewer than two tool counts that have them."""


class PositionDecile(Frozen):
    """Pass rate by where the expected tool sat in the list shown (docs/robustness.md): one
    tenth of the list of one model × prompt × descriptions × names, over its levels with
    distractors. A trial counts at its first expected tool's position (`tool_positions`)."""

    model: str
    prompt: str
    """The prompt config's id, without the level."""
    descriptions: str
    names: str
    decile: int
    """0: the first tenth of the list, … 9: the last."""
    n: int
    """Graded trials whose expected tool sat there."""
    passes: int
    rate: float | None
    low: float
    high: float
    """Wilson 95% interval of the pass rate."""


class SelectionRecall(Frozen):
    """Tool selection before the model (a prompt config's `select:`) in one model × prompt
    config: how often the selection held the tools the user's messages called for, and whose
    failure each failed trial was (docs/robustness.md, "Tool selection")."""

    model: str
    prompt: str
    method: str
    """The selection's method (`bm25`, `embedding`) and, for an embedding, its model."""
    k: int
    """How many tools each selection showed."""
    trials: int
    """Graded trials with at least one user message that called for a tool."""
    held: int
    """Of them, those in which every message's selection held all the tools it called for."""
    rate: float | None
    low: float | None
    high: float | None
    """held / trials with its Wilson 95% interval; null without trials."""
    messages: int
    """User messages that called for a tool (a scripted turn's expected tools; for a
    simulated user's message, the scenario's expected tools not called yet)."""
    messages_held: int
    """Of them, those whose selection held all of those tools."""
    message_rate: float | None
    message_low: float | None
    message_high: float | None
    """messages_held / messages with its Wilson 95% interval (messages of one trial are not
    independent: read it as a description, the trial share as the measure)."""
    failures: int
    """Graded trials that did not pass."""
    selector_missed: int
    """Failed trials in which some message's selection lacked a tool it called for: the
    selector's failure (the model could not call what it was not shown)."""
    model_failed: int
    """Failed trials in which every selection held its tools: the model's failure, with the
    tools shown."""
    held_passes: int
    """Passed trials among `held`."""
    held_pass_rate: float | None
    """held_passes / held: the pass rate when the selector did its part; null without any."""
    selections: int = 0
    """Selections made (one per user message) in graded trials that recorded each selection."""
    tied: int = 0
    """Of them, those a score tie decided: tools scored the same as the last one shown, so the
    trial's seed chose which were shown."""
    tied_trials: int = 0
    """Graded trials with at least one selection a tie decided."""
    recall_at_1: float | None = None
    recall_at_3: float | None = None
    recall_at_5: float | None = None
    recall_at_10: float | None = None
    """The mean, over user messages that called for a tool, of the share of their tools ranked
    within the first 1, 3, 5 or 10 (ties broken by the seed); null without such messages."""
    recall_at_k: float | None = None
    """The same at the configured `k`: the share the model was shown."""
    seconds_p50: float | None = None
    seconds_p90: float | None = None
    """Median and 90th percentile of one selection's time (its own latency, outside the
    scenario's clock and the trials' latency); null without recorded selections."""


class Scorecard(Frozen):
    schema_version: int = SCORECARD_VERSION
    sweep_id: str
    built_at: str
    total: int
    done: int
    """Trials recorded (infra and harness errors included); rates exclude both."""
    rows: list[Row]
    extras: list[ConfigExtras]
    tool_calls: list[ToolCalls]
    latency_bins: list[float]
    """Upper edges (seconds) of the latency histogram bins; the last bin is open."""
    provenance: Provenance
    answers: AnswerQuality | None = None
    """Answer quality (fairness, adoption, grounding, judge variance) for sweeps that score it."""
    conversations: list[Conversations] = Field(default_factory=list)
    """Per config with conversation scenarios: turn and conversation pass rates, pass^k, and
    where the failed conversations first failed; empty for a sweep without conversations."""
    turns: list[TurnRow] = Field(default_factory=list)
    """Per config, conversation scenario and turn: its verdicts over the repetitions."""
    simulated_users: list[SimulatedUsers] = Field(default_factory=list)
    """Per config with simulated-user scenarios: pass rates with and without user errors, and
    failures by source; empty for a sweep without a simulated user."""
    robustness: list[Curve] = Field(default_factory=list)
    """Per configuration run at several tool counts (a sweep's `tool_list`): the curve of pass
    rate against tool count; empty for a sweep without the axis."""
    positions: list[PositionDecile] = Field(default_factory=list)
    """Per curve, the pass rate by the decile of the list the expected tool sat in, over its
    levels with distractors; empty for a sweep without them (or recorded before positions)."""
    selection: list[SelectionRecall] = Field(default_factory=list)
    """Per configuration whose prompt selects tools before the model: selection recall and
    failures split between selector and model; empty for a sweep without selection."""
    left_cassette: Literal["count", "exclude"] = "count"
    """How trials that left their cassette are counted (the sweep's `left_cassette`): `count`
    like any trial, or `exclude`d from every row's rates, outcomes and latency; how many there
    were is each config's `ConfigExtras.left_cassette` either way."""

    def of(self, dimension: Dimension) -> list[Row]:
        return [r for r in self.rows if r.dimension == dimension]

    def harness_errors(self) -> int:
        """Trials that hit a bug in the farm itself (`harness_error`): in no rate, always shown."""
        return sum(r.outcomes.get("harness_error", 0) for r in self.of("config"))


def rate_or_nan(value: float | None) -> float:
    return math.nan if value is None else value


if __name__ == "__main__":
    # The published schema: python -m mcp_farm.schema.scorecard > docs/scorecard.schema.json
    import json

    print(json.dumps(Scorecard.model_json_schema(), indent=2))
