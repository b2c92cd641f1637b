"""How one argument, item or key of a call is judged: the matcher kinds.

Matchers nest: `items`, `contains`, `keys` and `optional` hold matchers of their own, so an
argument that is an array or an object is judged piece by piece. Every nested matcher is
validated like a top-level one (a bad regular expression three levels down still fails the load).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Tag, field_validator, model_validator

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
