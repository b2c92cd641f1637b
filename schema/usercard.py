"""A simulated user's card (`user_sim:` on a scenario) and the read calls that check the
servers' final state after its conversation (docs/simulated-user.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from mcp_farm.schema.parse.regexes import checked_regex
from mcp_farm.schema.parse.strict import Strict

FactValue = str | int | float
"""A fact's value as a card writes it (YAML reads `4512` as a number); shown as text."""

FailureSource = Literal["agent", "user", "none"]
"""Whose mistake failed a trial with a simulated user: `user` when the user invented or
volunteered a fact before the agent's first failing point, or left early where the agent made
no wrong call; `agent` otherwise; `none` for a pass (or a trial that was not graded)."""

UserArm = Literal["conversation", "no_user"]
"""How a scenario with a card is run: `conversation` with its simulated user; `no_user` with
every fact of the card written into the opening and no user at all, so the cost of having to
converse is measured apart from tool skill."""

NO_USER_SUFFIX = "-nouser"
"""Added to the prompt config's id on the trials of the `no_user` arm, so every scorecard and
comparison shows them as a configuration of their own."""

MAX_USER_MESSAGES = 40
"""User messages one conversation may hold, the opening included: a scripted conversation's
`turns` and a simulated user's `max_turns` alike. Each message is at least one model reply
(and for a simulated user one user-model reply), so the limit keeps one trial's cost bounded
and the transcript readable; 40 is well above any conversation a person has with an
assistant about one task."""

STOP_MARKER = "###STOP###"
"""What the simulated user writes, as the guideline tells it, when the conversation is over."""


class UserCard(Strict):
    """Who the simulated user is and what it knows: turned into its system prompt beside the
    guideline. The user model sees this card and what the agent said to it, nothing else."""

    opening: str = Field(min_length=1)
    """The user's first message, sent verbatim (never generated), so every trial starts alike."""
    reason: str = Field(min_length=1)
    """Why the user is talking to the agent, in the user's own terms."""
    known: dict[str, FactValue] = Field(default_factory=dict)
    """Facts the user knows and may say when they help (name -> value)."""
    on_request: dict[str, FactValue] = Field(default_factory=dict)
    """Facts the user gives only when the agent asks for them (name -> value)."""
    unknown: list[str] = Field(default_factory=list)
    """Things the user does not know: asked about them, it answers "I don't know"."""
    satisfied_when: str = Field(min_length=1)
    """When the user's goal is met and it ends the conversation (with the stop marker)."""
    max_turns: int = Field(default=6, ge=1, le=MAX_USER_MESSAGES)
    """User messages at most, the opening included (at most MAX_USER_MESSAGES, as a scripted
    conversation's turns); the conversation ends after the agent's reply to the last one."""
    frozen: list[str] | None = None
    """A frozen user (`farm users freeze`): the messages after the opening that a recorded
    simulated user sent, replayed in order whatever the agent says; no user model is asked.
    When they run out the user has stopped."""

    @model_validator(mode="after")
    def _facts_apart(self) -> UserCard:
        both = sorted(set(self.known) & set(self.on_request))
        if both:
            raise ValueError(f"fact {both[0]!r} is in both `known` and `on_request`: pick one")
        if STOP_MARKER in self.opening:
            raise ValueError(f"the opening cannot hold the stop marker {STOP_MARKER}")
        if any(STOP_MARKER in m or not m.strip() for m in self.frozen or []):
            raise ValueError(f"a frozen message is empty or holds the stop marker {STOP_MARKER}")
        return self

    def values(self) -> list[str]:
        """Every value the card gives the user, as text: what its messages may contain."""
        return [str(v) for v in [*self.known.values(), *self.on_request.values()]]


class StateCheck(Strict):
    """A read call the farm makes after a simulated user's conversation, and what its result
    must (`matches`) or must not (`lacks`) contain: the servers' final state, graded on the
    outcome rather than on how the agent got there."""

    server: str | None = None
    """The attached server to call; may be left out when one attached server lists the tool."""
    tool: str
    """The tool's name as the server lists it (a read-only tool, as a rule)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    matches: str | None = None
    """A regular expression (case-insensitive, searched) the result's text must contain."""
    lacks: str | None = None
    """A regular expression (case-insensitive, searched) the result's text must not contain."""

    @field_validator("matches", "lacks")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        return checked_regex(pattern)

    @model_validator(mode="after")
    def _one_check(self) -> StateCheck:
        if (self.matches is None) == (self.lacks is None):
            raise ValueError("give exactly one of `matches` and `lacks`")
        return self

    @property
    def label(self) -> str:
        return f"{self.tool}({', '.join(f'{k}={v!r}' for k, v in self.arguments.items())})"
