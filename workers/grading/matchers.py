"""Parameter matchers: does one argument value satisfy what the scenario expects?

Matchers nest (`items`, `contains`, `keys`, `optional`); a reason for a value inside an
argument starts with where it is (`[0].oldText: …`), so the grade names the exact spot.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import jsonschema
from referencing.exceptions import Unresolvable  # jsonschema's own dependency (>= 4.18)

from mcp_farm.schema import (
    NeverCall,
    ParamMatcher,
    SpecError,
    ToolCallRecord,
    budgeted_fullmatch,
)
from mcp_farm.workers.grading.chained import (
    Chain,
    derived_problem,
)
from mcp_farm.workers.grading.normal import (
    normalize,
    normalize_path,
    same_json,
)
from mcp_farm.workers.grading.schemacheck import schema_error
from mcp_farm.workers.grading.typed import (
    UNTYPED,
    Typed,
)
from mcp_farm.workers.model.safejson import (
    shorten,
    wire_problem,
)

NO_CHAIN = Chain()
"""Nothing to derive from: a matcher judged outside a trial's chain."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _within(value: Any, target: float, tolerance: float) -> bool:
    try:
        return abs(float(value) - target) <= tolerance
    except OverflowError:  # an integer too large for a float is not near any number
        return False


def located(where: str, reason: str) -> str:
    """`where` joined to a reason that may start with a deeper location."""
    return f"{where}{reason}" if reason[:1] in ("[", ".") else f"{where}: {reason}"


def absent_problem(matcher: ParamMatcher) -> str | None:
    """None when the argument (or key) this matcher judges may be left out."""
    return None if matcher.kind == "optional" else "missing"


def check(
    matcher: ParamMatcher, value: Any, chain: Chain = NO_CHAIN, typed: Typed = UNTYPED
) -> str | None:
    """None when the value satisfies the matcher, else the reason in words. `typed` is the
    value's place in the tool's input schema: `exact` and `one_of` compare numbers as it
    types them (`Typed.argument(schema, name)`; without it, JSON types are held).

    Whatever the value holds, this returns; only a matcher that cannot be applied raises
    (SpecError: the scenario's fault, never the model's). A value that was given is judged
    here; whether a missing one may be missing is `absent_problem`'s question.
    """
    while matcher.optional is not None:
        matcher = matcher.optional
    if matcher.kind == "any":
        return None
    problem = wire_problem(value)
    if problem:
        # Decoders pass only plain JSON; a value from elsewhere (a set, an integer too long to
        # print) would break the comparisons below, and matches nothing a scenario can say.
        return f"not a plain JSON value: {problem}"
    return _judge(matcher, value, chain, typed)


def _judge(matcher: ParamMatcher, value: Any, chain: Chain, typed: Typed) -> str | None:
    kind = matcher.kind
    if matcher.optional is not None:
        return _judge(matcher.optional, value, chain, typed)
    if kind == "any":
        return None
    if kind in ("items", "contains"):
        return _array_problem(matcher, value, chain, typed)
    if kind == "keys":
        return _object_problem(matcher, value, chain, typed)
    if kind == "derived_from_step":
        assert matcher.derived_from_step is not None
        return derived_problem(
            value, matcher.derived_from_step, chain, matcher.from_key, matcher.from_regex
        )
    if kind == "exact":
        ok = same_json(value, matcher.exact, typed=typed)
        return None if ok else f"expected {shorten(matcher.exact)}, got {shorten(value)}"
    if kind == "number":
        assert matcher.number is not None
        ok = _is_number(value) and _within(value, matcher.number, matcher.tolerance)
        return (
            None if ok else f"expected {matcher.number}±{matcher.tolerance}, got {shorten(value)}"
        )
    if kind == "json_schema":
        try:
            error = schema_error(value, matcher.json_schema or {})
        except (jsonschema.SchemaError, Unresolvable, RecursionError) as exc:
            raise SpecError("scenario", "json_schema", f"invalid JSON schema: {exc}") from None
        return f"does not fit the schema: {error.message}" if error is not None else None
    if kind == "one_of":
        options = matcher.one_of or []
        hit = any(same_json(value, o, fold=True, typed=typed) for o in options)
        return None if hit else f"expected one of {shorten(options)}, got {shorten(value)}"
    if not isinstance(value, str):
        return f"expected a string, got {type(value).__name__} {shorten(value)}"
    return _check_text(matcher, kind, value)


def _array_problem(matcher: ParamMatcher, value: Any, chain: Chain, typed: Typed) -> str | None:
    if not isinstance(value, list):
        return f"expected an array, got {type(value).__name__} {shorten(value)}"
    if isinstance(matcher.items, list):
        if len(value) != len(matcher.items):
            return f"expected {len(matcher.items)} item(s), got {len(value)}"
        pairs = list(zip(matcher.items, value, strict=True))
    else:
        pairs = [(matcher.items, item) for item in value] if matcher.items else []
    for i, (each, item) in enumerate(pairs):
        reason = _judge(each, item, chain, typed.item(i))
        if reason:
            return located(f"[{i}]", reason)
    wanted = [matcher.contains] if isinstance(matcher.contains, ParamMatcher) else matcher.contains
    for k, each in enumerate(wanted or []):
        reasons = [_judge(each, item, chain, typed.item(i)) for i, item in enumerate(value)]
        if all(reasons):
            name = "contains" if isinstance(matcher.contains, ParamMatcher) else f"contains[{k}]"
            why = located("; item [0]", reasons[0] or "") if value else "; the array is empty"
            return f"no item satisfies {name}{why}"
    return None


def _object_problem(matcher: ParamMatcher, value: Any, chain: Chain, typed: Typed) -> str | None:
    if not isinstance(value, dict):
        return f"expected an object, got {type(value).__name__} {shorten(value)}"
    keys = matcher.keys or {}
    for key, each in keys.items():
        if key not in value:
            reason = absent_problem(each)
        else:
            reason = _judge(each, value[key], chain, typed.key(key))
        if reason:
            return located(f".{key}", reason)
    if matcher.extra_keys == "forbid":
        extra = sorted(str(k) for k in value if k not in keys)
        if extra:
            return f"unexpected key(s) {', '.join(extra)}"
    return None


def _check_text(matcher: ParamMatcher, kind: str, value: str) -> str | None:
    if kind == "normalized":
        ok = normalize(value) == normalize(matcher.normalized or "")
        return None if ok else f"expected {matcher.normalized!r}, got {shorten(value)}"
    if kind == "regex":
        flags = re.IGNORECASE | re.DOTALL
        ok = budgeted_fullmatch(matcher.regex or "", value, field="regex", flags=flags) is not None
        return None if ok else f"{shorten(value)} does not match /{matcher.regex}/"
    assert kind == "path", kind
    ok = normalize_path(value) == normalize_path(matcher.path or "")
    return None if ok else f"expected path {matcher.path!r}, got {shorten(value)}"


def forbidden(
    never: list[NeverCall],
    calls: list[ToolCallRecord],
    schemas: Mapping[str, dict[str, Any]] | None = None,
) -> str | None:
    """What the first call that a `never:` entry names did, or None: a call is forbidden
    when its tool (and server, where named) is the entry's and every argument the entry
    names is given and matches, numbers compared as the tool's input schema (`schemas`, by
    tool name) types them, as an expected step's are. Made at all counts, whether it
    succeeded or failed."""
    for c in calls:
        for rule in never:
            if c.tool != rule.tool or (rule.server and c.server != rule.server):
                continue
            schema = (schemas or {}).get(c.tool)
            if all(
                arg in c.arguments
                and check(m, c.arguments[arg], typed=Typed.argument(schema, arg)) is None
                for arg, m in rule.params.items()
            ):
                shown = ", ".join(f"{a}={shorten(c.arguments[a])}" for a in rule.params)
                return f"called {c.tool}({shown}), which `never` forbids"
    return None
