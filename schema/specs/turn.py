"""A conversation's turn, and the calls a turn names: setup, forbidden, elicitation answers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from mcp_farm.schema.expect import ExpectedCall, ParamMatcher, Route, StateProbe
from mcp_farm.schema.parse.regexes import checked_regex
from mcp_farm.schema.parse.strict import Strict
from mcp_farm.schema.vocab import ElicitAction

CallCounting = Literal["lenient", "strict"]
"""`lenient`: calls of an expected tool that do no step are allowed (a retry, a look);
`strict`: each step is done by one call, any other call of an expected tool is `wrong_params`
(one that fits a step already done too), and a call identical to an earlier one a `tool_loop`
unless it does a step of its own."""


OnTurnFailure = Literal["stop", "continue"]
"""After a conversation's turn fails: `stop` ends the conversation there; `continue` has the
farm make the turn's expected calls itself and show the model the expected turn, so later turns
start from the expected state (docs/conversations.md)."""


class SetupCall(Strict):
    """A tool call the farm makes before the model starts, to seed a server (data a server
    keeps in memory, or needs before the request makes sense). Recorded apart from the
    model's calls and never graded; a setup call that fails makes the trial an infra_error."""

    server: str | None = None
    """The attached server to call; may be left out when the scenario attaches one server."""
    tool: str
    """The tool's name as the server lists it (never the prefixed name a model may see)."""
    arguments: dict[str, Any] = Field(default_factory=dict)


class NeverCall(Strict):
    """A call that must never happen (`never:`): made at any point, the trial fails with the
    outcome `forbidden_call` (docs/conversations.md, "Calls that must never happen")."""

    tool: str
    """The tool's name as the server lists it."""
    server: str | None = None
    """Only this server's tool, when two servers offer the same name."""
    params: dict[str, ParamMatcher] = Field(default_factory=dict)
    """The call is forbidden when every argument named here matches (a missing one does not);
    none named: any call of the tool."""

    @model_validator(mode="after")
    def _no_chain(self) -> NeverCall:
        for arg, matcher in self.params.items():
            for below, m in matcher.nested():
                if m.derived_from_step is not None or m.from_turn is not None:
                    raise ValueError(
                        f"params.{arg}{below}: a `never` matcher cannot take a value from a "
                        "step's result (it is judged on its own)"
                    )
        return self


ElicitValue = str | int | float | bool | list[str] | None
"""A value an elicitation's form may hold (MCP `ElicitResult.content`: primitives only)."""


class ElicitAnswer(Strict):
    """The user's scripted answer to a server's elicitation request (`elicit:`): the first
    entry whose `message` and `field` both match the request answers it
    (docs/conversations.md, "Servers that ask the user")."""

    message: str | None = None
    """A regular expression (case-insensitive, searched) over the request's message."""
    field: str | None = None
    """A property the request's schema asks for (`requestedSchema.properties`)."""
    action: ElicitAction
    """`accept` (with `content`), `decline` (the user said no) or `cancel` (dismissed)."""
    content: dict[str, ElicitValue] | None = None
    """The form's values, for `accept` only; checked against the request's schema when the
    request comes (a mismatch is the scenario's error: the trial is an infra_error)."""

    @field_validator("message")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        return checked_regex(pattern)

    @model_validator(mode="after")
    def _matched_and_answered(self) -> ElicitAnswer:
        if self.message is None and self.field is None:
            raise ValueError("an `elicit` entry needs `message` or `field` to match requests by")
        if self.action == "accept" and self.content is None:
            raise ValueError("content: `action: accept` needs the form's `content`")
        if self.action != "accept" and self.content is not None:
            raise ValueError(f"content: `action: {self.action}` sends no content")
        return self


TurnEvent = Literal["tools_changed"]
"""What a turn's `event:` may be (docs/conversations.md)."""


class Turn(Strict):
    """One user message of a conversation (`turns:`), and what is right in reply to it: the
    same grammar as a one-prompt scenario's, scoped to the turn."""

    user: str = Field(min_length=1)
    """What the user says in this turn."""
    paraphrases: list[str] = Field(default_factory=list)
    """Other wordings of this message; a trial's wording k takes each turn's k-th paraphrase
    (the verbatim message where a turn has fewer)."""
    expect: list[ExpectedCall] = Field(default_factory=list)
    """The calls this turn expects; empty (or `none`) means no tool should be called."""
    routes: list[Route] = Field(default_factory=list)
    """Instead of `expect`: two or more ways of doing this turn's task."""
    order: Literal["ordered", "unordered"] = "ordered"
    allowed_extra: list[str] = Field(default_factory=list)
    """Tools the agent may also call in this turn without penalty."""
    final_answer: str | None = None
    """A regular expression (case-insensitive, searched) this turn's last reply must contain."""
    example_answer: str | None = None
    """A reply an ideal agent would give to this turn (self-checks; `continue` shows it)."""
    must_ask: list[str] = Field(default_factory=list)
    """The right reply asks for a detail the user left out: no call (but `allowed_extra`), a
    question mark, and a match of one of these regular expressions (case-insensitive). A call
    made instead is the outcome `guessed`."""
    calls: CallCounting | None = None
    """This turn's call counting; left out, the scenario's."""
    never: list[NeverCall] = Field(default_factory=list)
    """Calls that must not be made in this turn (beside the scenario's own `never`)."""
    confirms: bool = False
    """This user message confirms a destructive action: under `confirm_destructive`, a tool
    the server marks `destructiveHint: true` may be called in reply to it and after."""
    event: TurnEvent | None = None
    """Something that happens before this turn's message: `tools_changed`, a server changes
    its tool list (the farm makes the `trigger` call, the server sends
    `notifications/tools/list_changed`, the farm lists its tools again)."""
    trigger: SetupCall | None = None
    """The call the farm makes to cause the `event` (never shown to the model as its own)."""
    elicit: list[ElicitAnswer] = Field(default_factory=list)
    """How the user answers a server's elicitation requests during this turn (before the
    scenario's own `elicit`); an unscripted request is declined and noted on the trial."""
    state: list[StateProbe] = Field(default_factory=list)
    """Probes of the servers' state the farm runs after this turn, never shown to the model
    (docs/state.md); part of the turn's verdict."""
    min_calls: int | None = Field(default=None, ge=0)
    """The fewest calls the model must make in this turn itself (calls a server received; a
    call of an earlier turn credited by `known_from_earlier` is none of them): fewer is
    `no_tool_call`. Left out: 1 on a turn with steps, 0 on one without (`needed_calls`).
    `min_calls: 0` lets a turn whose steps earlier calls all did be answered without a call;
    `min_calls: 1` on a turn with only `allowed_extra` says it must look something up."""

    @property
    def needed_calls(self) -> int:
        """`min_calls`, or its default: 1 where the turn has steps, else 0."""
        if self.min_calls is not None:
            return self.min_calls
        return 1 if self.expect or self.routes else 0

    @model_validator(mode="before")
    @classmethod
    def _none_means_empty(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("expect") == "none":
            return data | {"expect": []}
        return data

    @field_validator("final_answer")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        return checked_regex(pattern)

    @field_validator("must_ask")
    @classmethod
    def _all_compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            checked_regex(pattern)
        return patterns

    @model_validator(mode="after")
    def _one_form(self) -> Turn:
        if self.routes and self.expect:
            raise ValueError("give `expect` or `routes`, not both")
        if len(self.routes) == 1:
            raise ValueError("`routes` needs two or more routes (one route is just `expect`)")
        if (self.event is None) != (self.trigger is None):
            raise ValueError(
                "`event: tools_changed` and `trigger:` go together: the trigger is the call "
                "the farm makes to change the server's tool list"
            )
        if self.must_ask and (self.expect or self.routes or self.final_answer):
            raise ValueError(
                "a `must_ask` turn expects no call and no answer pattern: leave out "
                "`expect`, `routes` and `final_answer` (the next turn gives the detail)"
            )
        if self.min_calls and (
            self.must_ask or not (self.expect or self.routes or self.allowed_extra)
        ):
            raise ValueError(
                f"`min_calls: {self.min_calls}` on a turn where no call is right: give the "
                "calls it may make (`expect`, `routes` or `allowed_extra`), or leave it out"
            )
        return self


def from_turn_problem(field: str, turn: int, given: int) -> str:
    """What to write instead of a `from_turn` that names no earlier turn."""
    if turn == 0:
        return (
            f"{field} names turn {given}, but this is the first turn (0): a value of this turn's "
            "own steps is read with `derived_from_step` alone; leave `from_turn` out"
        )
    return (
        f"{field} must name an earlier turn (0..{turn - 1}), got {given}; for a step of this "
        "turn, leave `from_turn` out"
    )
