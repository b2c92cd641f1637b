"""The scorecard's conversations and simulated users: turn by turn, and how much of the
variance the users account for."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mcp_farm.schema.scorecard.rows import (
    Frozen,
)


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
