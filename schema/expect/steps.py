"""The calls a scenario expects: steps, the tools each accepts, their order, routes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator

from mcp_farm.schema.expect.matchers import ParamMatcher
from mcp_farm.schema.parse.regexes import checked_regex
from mcp_farm.schema.parse.strict import Strict


def _tool_shape(value: Any) -> str:
    # Called on YAML data when loading and on the model when dumping: both shapes count.
    return "tool[choice]" if isinstance(value, dict | ToolChoice) else "tool[name]"


class ToolOption(Strict):
    """One alternative of a `one_of` step that takes arguments of its own:
    `{name: read_file, params: {path: ...}}`. Its `params` replace the step's shared block."""

    name: str
    params: dict[str, ParamMatcher]
    example: dict[str, Any] | None = None
    """Arguments an ideal agent calling this alternative would send: the self-checks call it
    in the step's first tool's place, and it must pass."""


def _option_shape(value: Any) -> str:
    return "option[params]" if isinstance(value, dict | ToolOption) else "option[name]"


Option = Annotated[
    Annotated[str, Tag("option[name]")] | Annotated[ToolOption, Tag("option[params]")],
    Discriminator(_option_shape),
]


class ToolChoice(Strict):
    """Several tools, any of which does the step: `tool: {one_of: [read_text_file, read_file]}`
    (servers rename tools between versions, or offer two that serve equally). An alternative
    may carry its own `params` (`{name: get, params: {...}}`) when the tools take different
    arguments; the others use the step's shared `params`."""

    one_of: tuple[Option, ...] = Field(min_length=2)
    """The tools accepted. The first is the step's name in listings and scorecards, and the
    tool the ideal agent of the self-checks calls."""

    @field_validator("one_of")
    @classmethod
    def _distinct_names(cls, options: tuple[Any, ...]) -> tuple[Any, ...]:
        names = [o if isinstance(o, str) else o.name for o in options]
        if any(not name for name in names):
            raise ValueError("a tool name cannot be empty")
        if len(set(names)) < len(names):
            raise ValueError("names a tool twice")
        return options

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(o if isinstance(o, str) else o.name for o in self.one_of)

    def own_params(self, tool: str) -> dict[str, ParamMatcher] | None:
        """The params of the alternative `tool`, when it has its own."""
        for option in self.one_of:
            if isinstance(option, ToolOption) and option.name == tool:
                return option.params
        return None


class ExpectedCall(Strict):
    """One tool call the scenario expects: a step."""

    tool: Annotated[
        Annotated[str, Tag("tool[name]")] | Annotated[ToolChoice, Tag("tool[choice]")],
        Discriminator(_tool_shape),
    ]
    """Tool name as the server lists it, or `{one_of: [a, b]}` when any of several will do;
    the params are then judged on whichever was called (its own, when it has them)."""
    server: str | None = None
    """Server the tool must come from, when two servers offer the same name."""
    params: dict[str, ParamMatcher] = Field(default_factory=dict)
    """Matchers per argument; arguments not named here are free if the tool's schema allows them.
    On a `one_of` step, the block shared by the alternatives that have no `params` of their own."""
    after: list[int] | None = None
    """Steps (0-based, earlier in the list) whose calls must all come before this step's call.
    Left out: the previous step in an `ordered` scenario, no step in an `unordered` one, and
    in either the steps its chained values come from (in this turn). `after: [0]` on two
    steps lets them run in either order once step 0 is done, under any call counting."""
    idempotent: bool = False
    """Doing this step again changes nothing (a lookup, setting a value to what it already
    is): under `calls: strict` a further call that also meets it is no mistake, nor is a copy
    of one, even one the server answers with an error ("already exists"). A tool its server
    marks `readOnlyHint: true` is treated so without this."""
    known_from_earlier: bool = False
    """In a conversation: an earlier turn's call that met this step (the same call, with a
    result that was no error) may do it, when this turn makes no call of its tools ("I
    already looked that up"). The turn still makes a call of its own unless it says
    `min_calls: 0` (Turn.min_calls)."""
    expect_error: bool = False
    """The call must come back as an error (a step that tests how the agent copes with one).
    Otherwise a call that returned an error does not count as this step."""
    example: dict[str, Any] | None = None
    """Arguments an ideal agent would send; self-checks replay them and must pass."""

    @property
    def names(self) -> tuple[str, ...]:
        """The tool names this step accepts; the first is its name in listings."""
        return (self.tool,) if isinstance(self.tool, str) else self.tool.names

    def params_for(self, tool: str) -> dict[str, ParamMatcher]:
        """The matchers a call of `tool` is judged by: its alternative's own, or the step's."""
        own = None if isinstance(self.tool, str) else self.tool.own_params(tool)
        return self.params if own is None else own

    def declared(self, tool: str) -> set[str]:
        """Arguments of `tool` that are never "unexpected", even where its schema omits them:
        those its own matchers name. The block shared by several tools declares nothing: each
        tool is held to its own input schema."""
        if isinstance(self.tool, str) or self.tool.own_params(tool) is not None:
            return set(self.params_for(tool))
        return set()

    def param_blocks(self) -> Iterator[tuple[str, dict[str, ParamMatcher]]]:
        """Every params block of the step with its field path: the shared one, then each
        alternative's own."""
        yield "params", self.params
        if not isinstance(self.tool, str):
            for i, option in enumerate(self.tool.one_of):
                if isinstance(option, ToolOption):
                    yield f"tool.one_of[{i}].params", option.params

    @property
    def label(self) -> str:
        """The step in messages: `read_file`, or `read_text_file|read_file`."""
        return "|".join(self.names)

    def requires(self, index: int, order: Literal["ordered", "unordered"]) -> list[int]:
        """The steps that must come before this one, step `index` of a scenario in `order`."""
        if self.after is not None:
            return self.after
        listed = [index - 1] if order == "ordered" and index > 0 else []
        return sorted(set(listed) | self.own_sources())

    def own_sources(self) -> set[int]:
        """The steps of this step's own list its chained values come from (those taken from an
        earlier turn, `from_turn`, aside)."""
        return {
            m.derived_from_step
            for _at, block in self.param_blocks()
            for top in block.values()
            for _where, m in top.nested()
            if m.derived_from_step is not None and m.from_turn is None
        }

    def sources(self) -> set[int]:
        """The steps this step's chained values come from."""
        return set().union(
            *(m.sources() for _where, block in self.param_blocks() for m in block.values())
        )


def order_problems(expect: Sequence[ExpectedCall], at: str = "expect") -> Iterator[tuple[str, str]]:
    """(field, problem) for each step that points at itself or a later step: a chained value
    (at any depth) or an `after`. Steps may only point back, so every declared order can be
    met and checked in list order. `at` is where the steps are (`routes[1].expect`)."""
    for j, call in enumerate(expect):
        earlier = f"must name an earlier step (0..{j - 1})"
        for block_at, arg, matcher in (
            (at, arg, m) for at, block in call.param_blocks() for arg, m in block.items()
        ):
            for below, each in matcher.nested():
                step = each.derived_from_step
                if step is not None and each.from_turn is None and not 0 <= step < j:
                    field = f"{at}[{j}].{block_at}.{arg}{below}.derived_from_step"
                    yield (
                        field,
                        (
                            f"{earlier}, got {step}"
                            if j
                            else "the first step has no earlier result to derive from"
                        ),
                    )
        for k, step in enumerate(call.after or []):
            field = f"{at}[{j}].after[{k}]"
            if not 0 <= step < j:
                yield field, f"{earlier}, got {step}" if j else "the first step follows no other"
            elif step in (call.after or [])[:k]:
                yield field, f"names step {step} twice"


class Route(Strict):
    """One way of doing a scenario's task, when there is more than one: "one JOIN query, or
    the two lookups"; "search, and say nothing was found, or search and add the note". Its
    steps are written and graded as a scenario's `expect`; its answer pattern, when given,
    replaces the scenario's."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """Recorded on every trial that took this route, and shown in its details."""
    expect: list[ExpectedCall] = Field(default_factory=list)
    """The route's steps; empty means no tool is called on this route."""
    order: Literal["ordered", "unordered"] | None = None
    """The order of this route's steps; left out, the scenario's."""
    final_answer: str | None = None
    """The answer pattern on this route; left out, the scenario's."""
    example_answer: str | None = None
    """An ideal answer on this route (self-checks); left out, the scenario's."""
    description: str = ""

    @field_validator("final_answer")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        return checked_regex(pattern)
