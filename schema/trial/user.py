"""What a trial with a simulated user recorded of the user: who it was, its cost and its
mistakes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from mcp_farm.schema.ids import digest
from mcp_farm.schema.trial.records import TokenCounts, ToolCallRecord


class UserIdentity(BaseModel):
    """Which simulated user a trial met: trials of different identities are not pooled
    without saying so (docs/simulated-user.md)."""

    model_id: str
    """The user model target's id."""
    model_key: str
    """ModelTarget.key() of the user model: its whole target, pins included."""
    pins: dict[str, str] = Field(default_factory=dict)
    """What the user model's adapter reports about its serving stack."""
    temperature: float
    seed: int
    """This trial's user seed: the sweep's user seed plus the repetition, or plus the user seed
    index under `user_model.seeds: m > 1` (then the level of the user in the variance split)."""
    guideline: str
    """The guideline's version (e.g. `v1`), the user's behaviour rules."""
    max_tokens: int | None = None
    """Tokens one user message may take (`user_model.max_tokens`): a shorter limit cuts the
    user's messages, so it is another user. None for a user without a model (frozen, no-user)
    and in records written before it was kept."""

    @property
    def pool_key(self) -> str:
        """What trials must share to be pooled as one user: model (target and reported pins),
        temperature, message length limit and guideline; the seed varies by repetition on
        purpose. A record without `max_tokens` keeps the key it was stored under."""
        pinned = digest({"target": self.model_key, "pins": self.pins})[:8]
        limit = "" if self.max_tokens is None else f" max_tokens={self.max_tokens}"
        return (
            f"{self.model_id} t={self.temperature:g}{limit} guideline {self.guideline} ({pinned})"
        )


UserErrorKind = Literal["invented", "left_early", "volunteered", "off_script"]
"""A simulated user's mistake: `invented` a fact on neither its card nor in what the agent said;
`off_script` a message that does not play the user (empty, an echo of its own instructions, or
no answer to the agent's question for a card fact);
`left_early` stopped (the stop marker) in answer to the agent's question before the outcome it
came for was reached; `volunteered` gave a fact its card keeps for when it is asked (`on_request`)
when the agent's reply before had asked nothing."""


class UserError(BaseModel):
    """A simulated user's message that holds a mistake of one kind (`kind`)."""

    message: int
    """0-based index of the user's message (0 is the opening, which is the card's own; a
    parting message, never sent to the agent, has the next index after the last one sent)."""
    kind: UserErrorKind = "invented"
    """What the mistake was; records written before the kinds are all `invented`."""
    facts: list[str]
    """The offending pieces of text, as the user wrote them (empty for `left_early`)."""
    said: str
    """The whole message, as sent (for `left_early`, the parting message, or empty)."""

    def describe(self) -> str:
        """One line for a person: the message, the kind and its pieces. Plain text: the
        pieces are the user model's words, so a page or a terminal escapes the line."""
        if self.kind == "left_early":
            return f"message {self.message}: left early (stopped at the agent's question)"
        if self.kind == "off_script":
            return f"message {self.message}: off script, {'; '.join(self.facts)}"
        return f"message {self.message}: {self.kind} {', '.join(self.facts)}"


class UserSimRecord(BaseModel):
    """What a trial with a simulated user recorded of the user: who it was, what it cost (kept
    apart from the agent's tokens and time), how the conversation ended, and its mistakes."""

    identity: UserIdentity
    messages: int = 1
    """User messages sent, the opening included."""
    first_calls: list[int] = Field(default_factory=list)
    """Per user message: the index (in the trial's `tool_calls`) of the first call the agent
    made in reply to it."""
    ended: Literal["user_stop", "max_turns", "agent_stop"] = "agent_stop"
    """`user_stop`: the user wrote the stop marker; `max_turns`: the card's turn limit;
    `agent_stop`: the agent's part ended otherwise than with a reply (a limit, a format error,
    a loop) or the session broke."""
    tokens: TokenCounts = Field(default_factory=TokenCounts)
    """The user model's tokens, never counted in the trial's (the agent's) `tokens`."""
    seconds: float = 0.0
    """Seconds spent on the user: waiting for the user model, and reading and writing the
    cache of user turns; taken out of the trial's `latency_s`."""
    cached: int = 0
    """User messages taken from the cache of user turns (temperature 0 only): they cost no
    user tokens, only the cache read's seconds."""
    errors: list[UserError] = Field(default_factory=list)
    state_calls: list[ToolCallRecord] = Field(default_factory=list)
    """The scenario's `final_state` read calls, made by the farm after the conversation."""
