"""A scenario: one request or a conversation, what the agent should call, what its answer says."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from mcp_farm.schema.answer import AnswerSpec
from mcp_farm.schema.expect import ExpectedCall, GradeBy, ParamMatcher, Route, StateProbe
from mcp_farm.schema.parse.regexes import checked_regex
from mcp_farm.schema.parse.strict import Strict
from mcp_farm.schema.specs.turn import (
    CallCounting,
    ElicitAnswer,
    NeverCall,
    OnTurnFailure,
    SetupCall,
    Turn,
    from_turn_problem,
)
from mcp_farm.schema.usercard import MAX_USER_MESSAGES, StateCheck, UserCard
from mcp_farm.schema.vocab import Tier


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
                                        from_turn_problem(
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
