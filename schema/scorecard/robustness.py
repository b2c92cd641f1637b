"""The scorecard's robustness: pass rate against tool count per list level, by list
position, and tool selection's recall."""

from __future__ import annotations

from mcp_farm.schema.scorecard.rows import (
    Frozen,
)


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
