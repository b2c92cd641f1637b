"""What a scenario expects of the agent's calls (the steps, the tools each accepts, the
matchers) and of the world afterwards (`state:` probes, `grade_by`; docs/state.md).

Matchers nest: `items`, `contains`, `keys` and `optional` hold matchers of their own, so an
argument that is an array or an object is judged piece by piece. Every nested matcher is
validated like a top-level one (a bad regular expression three levels down still fails the load).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Field, Tag, field_validator, model_validator

from mcp_farm.schema.parse.patterns import json_schema_problem
from mcp_farm.schema.parse.regexes import checked_regex
from mcp_farm.schema.parse.strict import Strict

MATCHER_KINDS = (
    "exact",
    "normalized",
    "regex",
    "one_of",
    "number",
    "path",
    "any",
    "derived_from_step",
    "json_schema",
    "optional",
    "items",
    "contains",
    "keys",
)

# Kinds that may be given together in one matcher: both speak about the items of one array.
ARRAY_KINDS = frozenset({"items", "contains"})

# Where a nested matcher is wrapped in `optional`, it would say "this item may be missing",
# which means nothing for an array's items: only an argument or an object's key can be absent.
NO_OPTIONAL_INSIDE = ("optional", "items", "contains")


def _matcher_shape(value: Any) -> str:
    # The tag names hold "[" so that error paths drop them, as they drop pydantic's own
    # validator names (mcp_farm.schema.parse.loading.spec_errors): `items[1].regex`, not `items.list[1].regex`.
    return "shape[list]" if isinstance(value, list) else "shape[one]"


def _tool_shape(value: Any) -> str:
    # Called on YAML data when loading and on the model when dumping: both shapes count.
    return "tool[choice]" if isinstance(value, dict | ToolChoice) else "tool[name]"


def _kind_to_add(given: set[str]) -> str | None:
    """What a matcher that gives only a modifier (`from_turn`, `from_key`, `tolerance`, …) and no
    kind must add, said as the fix; None when it gives no modifier either."""
    if given & {"from_turn", "from_key", "from_regex"}:
        named = [f"`{k}`" for k in ("from_turn", "from_key", "from_regex") if k in given]
        verb = "reads" if len(named) == 1 else "read"
        return (
            f"{' and '.join(named)} {verb} a value from an earlier step's result: add "
            "`derived_from_step`, the "
            "step whose result holds the value (with `from_turn`, a step of that turn), as in "
            "{derived_from_step: 0, from_turn: 0, from_key: id}"
        )
    if "tolerance" in given:
        return "`tolerance` goes with `number`: add the number it is a tolerance of"
    if "extra_keys" in given:
        return "`extra_keys` goes with `keys`: add `keys`, the matchers of the object's keys"
    return None


class ParamMatcher(Strict):
    """How one argument (or one item, or one key) is judged. Exactly one kind is given, except
    that `items` and `contains` may go together.

    A bare value in YAML (`path: Desktop`) means `exact`. An object is always a matcher; an
    exact object or array is written `{exact: ...}`.
    """

    exact: Any = None
    """The value must equal this, its JSON type held at every depth (`true` is not `1`,
    `[true, 2]` is not `[1, 2]`), except numbers, which compare as the tool's input schema
    types their place: by value for `number`, integers only for `integer`, types held where
    the schema does not say."""
    normalized: str | None = None
    """Equal after lower-casing and collapsing whitespace."""
    regex: str | None = None
    """The string value must fully match this regular expression (case-insensitive)."""
    one_of: list[Any] | None = None
    """The value must be one of these, compared as `exact` compares (types held at every
    depth, numbers as the schema types them), except that strings are compared normalised at
    any depth."""
    number: float | None = None
    """The value must be numeric and within `tolerance` of this."""
    tolerance: float = 0.0
    """Absolute tolerance for `number`."""
    path: str | None = None
    """The value names the same path inside the sandbox (`Desktop`, `/Desktop/`, `~/Desktop`)."""
    any: bool | None = None
    """Any value is fine, as long as the argument is present."""
    derived_from_step: int | None = None
    """The value must be a whole value found in the result of a call of expected step k
    (0-based) made before this call: a chained argument (docs/writing-scenarios.md, "Chained values")."""
    from_key: str | None = None
    """With `derived_from_step`: the value is the one held under this JSON key of the result
    (at any depth), or at this path from the top (`order.total`, `items[0].id`), whole: the
    scalar there, or a scalar of the array or object there, never a part of a string."""
    from_regex: str | None = None
    """With `derived_from_step`: the value is what this regular expression's first capture
    group (or whole match) finds in the result's text (`Total: (\\d+)`)."""
    from_turn: int | None = None
    """With `derived_from_step`, in a conversation: the step is one of this earlier turn
    (0-based), not of this turn's list (docs/conversations.md)."""
    json_schema: dict[str, Any] | None = None
    """The value must validate against this JSON schema."""
    optional: ParamMatcher | None = None
    """The argument (or key) may be left out; when given, it must satisfy this matcher.
    `optional: false` reads "absent or false". Only for an argument or a key."""
    items: OneOrList | None = None
    """The value is an array. One matcher: every item satisfies it. A list of matchers: the
    array has exactly that many items, each satisfying the matcher at its position."""
    contains: OneOrList | None = None
    """The value is an array in which some item satisfies this matcher; given a list, each
    matcher of the list is satisfied by some item."""
    keys: dict[str, ParamMatcher] | None = None
    """The value is an object whose keys satisfy these matchers; a key whose matcher is
    `optional` may be missing."""
    extra_keys: Literal["forbid", "allow"] = "forbid"
    """With `keys`: whether the object may hold keys not named in `keys`."""

    @field_validator("regex", "from_regex")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        return checked_regex(pattern)

    @field_validator("json_schema")
    @classmethod
    def _applies(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        problem = json_schema_problem(schema) if schema is not None else None
        if problem:
            raise ValueError(problem)
        return schema

    @model_validator(mode="before")
    @classmethod
    def _scalar_means_exact(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return {"exact": data}
        # `optional: null` is "absent or null"; without this, pydantic would read the null
        # as "no nested matcher" and the kind would be lost.
        wrapped = {k: {"exact": None} for k in ("optional", "items", "contains") if k in data}
        return data | {k: v for k, v in wrapped.items() if data[k] is None}

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> ParamMatcher:
        given = self.kinds
        if not given and (missing := _kind_to_add(self.model_fields_set)):
            raise ValueError(missing)
        if len(given) != 1 and set(given) != ARRAY_KINDS:
            raise ValueError(
                f"give exactly one matcher kind of {', '.join(MATCHER_KINDS)} "
                f"(only items and contains go together); got {list(given) or 'none'}"
            )
        if "tolerance" in self.model_fields_set and given != ("number",):
            raise ValueError("`tolerance` only goes with `number`")
        if "extra_keys" in self.model_fields_set and given != ("keys",):
            raise ValueError("`extra_keys` only goes with `keys`")
        selectors = [k for k in ("from_key", "from_regex") if k in self.model_fields_set]
        if selectors and given != ("derived_from_step",):
            raise ValueError(f"`{selectors[0]}` only goes with `derived_from_step`")
        if len(selectors) > 1:
            raise ValueError("give one of `from_key` and `from_regex`, not both")
        if "from_turn" in self.model_fields_set and given != ("derived_from_step",):
            raise ValueError(
                "`from_turn` only goes with `derived_from_step`: it names the turn, "
                "`derived_from_step` the step of that turn whose result holds the value, as in "
                "{derived_from_step: 0, from_turn: 0, from_key: id}"
            )
        for name in NO_OPTIONAL_INSIDE:
            if any(child.kind == "optional" for child in self._children(name)):
                raise ValueError(
                    f"`optional` inside `{name}` means nothing: only an argument or a key "
                    "can be left out"
                )
        return self

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds given, in MATCHER_KINDS order."""
        return tuple(k for k in MATCHER_KINDS if k in self.model_fields_set)

    @property
    def kind(self) -> str:
        return self.kinds[0]

    def _children(self, name: str) -> list[ParamMatcher]:
        value = getattr(self, name)
        if value is None:
            return []
        if isinstance(value, ParamMatcher):
            return [value]
        if isinstance(value, dict):
            return list(value.values())
        return list(value)

    def nested(self, where: str = "") -> Iterator[tuple[str, ParamMatcher]]:
        """This matcher and every matcher inside it, each with its path below this one
        (`""`, `.items[0]`, `.keys.oldText`, …), as error messages name them."""
        yield where, self
        if self.optional is not None:
            yield from self.optional.nested(f"{where}.optional")
        for name in ("items", "contains"):
            value = getattr(self, name)
            if isinstance(value, ParamMatcher):
                yield from value.nested(f"{where}.{name}")
            elif value is not None:
                for i, child in enumerate(value):
                    yield from child.nested(f"{where}.{name}[{i}]")
        for key, child in (self.keys or {}).items():
            yield from child.nested(f"{where}.keys.{key}")

    def sources(self) -> set[int]:
        """Every step a value inside this matcher is derived from."""
        return {
            m.derived_from_step for _where, m in self.nested() if m.derived_from_step is not None
        }


OneOrList = Annotated[
    Annotated[list[ParamMatcher], Tag("shape[list]")] | Annotated[ParamMatcher, Tag("shape[one]")],
    Discriminator(_matcher_shape),
]
"""One matcher or a list of them (`items`, `contains`); the tag keeps error paths plain."""
ParamMatcher.model_rebuild()


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


# State probes (`state:`): what the world became after a trial or a turn (docs/state.md).

GradeBy = Literal["calls", "state", "both"]
"""What decides a trial's outcome: its calls (the steps), its `state:` probes, or both. Left
out: `calls` where no probe is written, `both` where one is."""

ProbeRead = Literal["text", "json", "structured"]
"""How a read call's result becomes the value a probe judges: its text, its text decoded as
JSON, or its `structuredContent`."""

ProbeKind = Literal["call", "snapshot", "file", "sqlite"]

_SELECT = re.compile(r"^\s*(select|with)\b", re.IGNORECASE)


class StateProbe(Strict):
    """One look at a server's state, and what must be found there (`state:` of a scenario or
    a turn). Give exactly one of `tool` (a read call), `snapshot: true` (the fixture server's
    hidden snapshot document), `file` (a file or folder in the server's sandbox) or `sqlite`
    (a SQLite file in the sandbox, with `query`)."""

    server: str | None = None
    """The attached server to look at; may be left out when the scenario attaches one server
    (or, for `tool`, when one attached server lists it)."""
    tool: str | None = None
    """A read call the farm makes: the tool's name as the server lists it."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The read call's arguments."""
    read: ProbeRead = "text"
    """How the read call's result is judged: `text`, `json` (the text decoded) or
    `structured` (its `structuredContent`)."""
    snapshot: bool = False
    """The fixture server's state as a document, from its hidden `farm_snapshot` tool."""
    file: str | None = None
    """A path inside the server's sandbox: a file gives its text, a folder the sorted names
    of its entries (a sub-folder's with a trailing `/`), a missing path `null`."""
    sqlite: str | None = None
    """A SQLite file inside the server's sandbox, opened read-only."""
    query: str | None = None
    """With `sqlite`: one SELECT; its rows, each a list of column values."""
    at: str | None = None
    """A JSON path (`notes[0].body`, `rows[1]`) to the part of the value that is judged;
    a path that leads nowhere finds `null`."""
    expect: ParamMatcher
    """What the value (or the part `at` names) must be: any matcher a step's argument takes
    (a bare value is `exact`)."""
    label: str = ""
    """How the probe is named in verdicts; left out, one is made from what it looks at."""

    @model_validator(mode="before")
    @classmethod
    def _bare_expect(cls, data: Any) -> Any:
        if isinstance(data, dict) and "expect" in data and not isinstance(data["expect"], dict):
            return data | {"expect": {"exact": data["expect"]}}
        return data

    @model_validator(mode="after")
    def _one_kind(self) -> StateProbe:
        given = [k for k, on in (("tool", self.tool), ("snapshot", self.snapshot)) if on] + [
            k for k in ("file", "sqlite") if getattr(self, k) is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of `tool`, `snapshot: true`, `file` and `sqlite` "
                f"(got {', '.join(given) or 'none'})"
            )
        if self.tool is None and (self.arguments or self.read != "text"):
            raise ValueError("`arguments` and `read` are for a `tool` probe (a read call)")
        if (self.sqlite is None) != (self.query is None):
            raise ValueError("`sqlite` and `query` go together")
        if self.query is not None and (
            not _SELECT.match(self.query) or ";" in self.query.strip().rstrip(";")
        ):
            raise ValueError("`query` must be one SELECT (the file is opened read-only)")
        for where, path in (("file", self.file), ("sqlite", self.sqlite)):
            if path is not None and (path.startswith("/") or ".." in path.split("/")):
                raise ValueError(f"`{where}` is a path inside the sandbox: relative, no `..`")
        for below, m in self.expect.nested():
            if m.derived_from_step is not None or m.from_turn is not None:
                raise ValueError(f"expect{below}: a probe cannot take a value from a step")
        return self

    @property
    def kind(self) -> ProbeKind:
        if self.tool is not None:
            return "call"
        if self.snapshot:
            return "snapshot"
        return "file" if self.file is not None else "sqlite"

    @property
    def name(self) -> str:
        """The label, or one made from what the probe looks at."""
        if self.label:
            return self.label
        where = f"{self.server}." if self.server else ""
        if self.tool is not None:
            args = ", ".join(f"{k}={v!r}" for k, v in self.arguments.items())
            shown = f"{where}{self.tool}({args})"
        elif self.snapshot:
            shown = f"{where}snapshot"
        elif self.file is not None:
            shown = f"{where}file {self.file}"
        else:
            shown = f"{where}sqlite {self.sqlite}: {self.query}"
        return f"{shown} at {self.at}" if self.at else shown


SetBack = Literal["restored", "copied_back", "untouched", "cannot", "left"]
"""What the farm did to one attached server after a failed turn under `continue`, graded by
state (docs/state.md): `restored` (its hidden `farm_restore` put the kept document back),
`copied_back` (its sandbox folder copied back in place), `untouched` (no way back, and the
model made no call to it in the turn: nothing to undo), `cannot` (no way back, and the model
called it), `left` (it could be set back, and was left as the model's calls made it, because
another server was `cannot`: all servers are set back, or none)."""

DivergedBy = Literal["model", "farm"]
"""Whose doing a diverged turn's starting state was: `model` (a failed turn before it could
not be set back, so the model's calls there stayed), `farm` (every server was set back and
every expected call made, and the probes still did not fit: the scenario's expected calls do
not reach the state its probes ask for, or a server did not put its state back)."""


class ProbeResult(BaseModel):
    """One probe as the farm ran it: what it expected, what it found, and whether that fits."""

    version: int = 1
    """Version of this record's shape."""
    turn: int | None = None
    """The turn (0-based) after which it ran; None: at the end of the trial."""
    label: str
    """The probe's name (StateProbe.name)."""
    kind: ProbeKind
    expected: str
    """The matcher, as JSON."""
    found: str
    """All of the value found, as JSON, never cut (with `at:`, the whole value the probe read,
    not only that part), so `farm rescore` can judge it again with a changed matcher or path;
    the trial page shows its first 2,000 characters. A marker (`workers/state.py`,
    `UNREADABLE`) when it could not be read as asked."""
    problem: str | None = None
    """None: the value fits; else why not, in words."""

    @property
    def passed(self) -> bool:
        return self.problem is None


class StateVerdict(BaseModel):
    """How a trial's state and calls compared (None on a trial with no probes)."""

    version: int = 1
    """Version of this record's shape."""
    grade_by: GradeBy
    """What decided the outcome."""
    passed: bool
    """Every probe fit."""
    calls_passed: bool
    """The calls alone passed (the outcome a calls-only grade would give was `pass`, or
    `output_mismatch`: the tools were right)."""
    calls_outcome: str
    """The outcome the calls alone gave."""
    other_path: bool = False
    """The state passed and the calls did not: another path reached the expected state
    (recorded beside the outcome, which `grade_by` decides; docs/state.md). Never where the
    farm set a turn back, made calls of its own or a turn diverged, nor where neither the
    model's calls nor the expected ones could change anything (a read-only trial's probes
    only say nothing changed)."""
    diverged: list[int] = Field(default_factory=list)
    """Turns (0-based) that started from a state the probes found diverged after a failed
    turn before them was continued (whose doing: `diverged_by`)."""
    diverged_by: dict[int, DivergedBy] = Field(default_factory=dict)
    """Per diverged turn, whose doing its starting state was (DivergedBy)."""
    restored: list[int] = Field(default_factory=list)
    """Failed turns (0-based) whose state the farm set back before `continue` went on."""
    probes: list[ProbeResult] = Field(default_factory=list)
    """Every probe run, after each turn and at the end."""
