"""Parameter matchers: does one argument value satisfy what the scenario expects?"""

from __future__ import annotations

import posixpath
import re
from typing import Any

import jsonschema
from referencing.exceptions import Unresolvable  # jsonschema's own dependency (>= 4.18)

from schema import ParamMatcher, SpecError, ToolCallRecord
from workers.safejson import shorten, wire_problem


def normalize(text: str) -> str:
    return " ".join(text.lower().split())


def normalize_path(text: str) -> str:
    """`~/Desktop/`, `/Desktop`, `./Desktop` and `Desktop` all become `Desktop`."""
    value = text.strip().replace("\\", "/")
    if value.startswith("~"):
        value = value[1:]
    value = posixpath.normpath("/" + value.lstrip("/"))
    return value.lstrip("/") or "."


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _within(value: Any, target: float, tolerance: float) -> bool:
    try:
        return abs(float(value) - target) <= tolerance
    except OverflowError:  # an integer too large for a float is not near any number
        return False


def _pattern(pattern: str, flags: int, field: str) -> re.Pattern[str]:
    """A scenario's regular expression, compiled. Loading rejects invalid ones; one that still
    fails here (a file changed under a running sweep) is the scenario's fault: SpecError."""
    try:
        return re.compile(pattern, flags)
    except (re.error, OverflowError, RecursionError) as exc:
        raise SpecError("scenario", field, f"invalid regular expression: {exc}") from None


def answer_pattern(pattern: str) -> re.Pattern[str]:
    """The compiled `final_answer` pattern (searched, case-insensitive)."""
    return _pattern(pattern, re.IGNORECASE, "final_answer")


def check(matcher: ParamMatcher, value: Any, prior: dict[int, ToolCallRecord]) -> str | None:
    """None when the value satisfies the matcher, else the reason in words.

    Whatever the value holds, this returns; only a matcher that cannot be applied raises
    (SpecError: the scenario's fault, never the model's).
    """
    kind = matcher.kind
    if kind == "any":
        return None
    problem = wire_problem(value)
    if problem:
        # Decoders pass only plain JSON; a value from elsewhere (a set, an integer too long to
        # print) would break the comparisons below, and matches nothing a scenario can say.
        return f"not a plain JSON value: {problem}"
    if kind == "exact":
        ok = value == matcher.exact and type(value) is type(matcher.exact)
        return None if ok else f"expected {shorten(matcher.exact)}, got {shorten(value)}"
    if kind == "number":
        assert matcher.number is not None
        ok = _is_number(value) and _within(value, matcher.number, matcher.tolerance)
        return (
            None if ok else f"expected {matcher.number}±{matcher.tolerance}, got {shorten(value)}"
        )
    if kind == "json_schema":
        try:
            jsonschema.validate(value, matcher.json_schema or {})
        except jsonschema.ValidationError as exc:
            return f"does not fit the schema: {exc.message}"
        except (jsonschema.SchemaError, Unresolvable, RecursionError) as exc:
            raise SpecError("scenario", "json_schema", f"invalid JSON schema: {exc}") from None
        return None
    if kind == "one_of":
        options = matcher.one_of or []
        hit = any(
            normalize(value) == normalize(o)
            if isinstance(value, str) and isinstance(o, str)
            else value == o
            for o in options
        )
        return None if hit else f"expected one of {shorten(options)}, got {shorten(value)}"
    if not isinstance(value, str):
        return f"expected a string, got {type(value).__name__} {shorten(value)}"
    return _check_text(matcher, kind, value, prior)


def _check_text(
    matcher: ParamMatcher, kind: str, value: str, prior: dict[int, ToolCallRecord]
) -> str | None:
    if kind == "normalized":
        ok = normalize(value) == normalize(matcher.normalized or "")
        return None if ok else f"expected {matcher.normalized!r}, got {shorten(value)}"
    if kind == "regex":
        pattern = _pattern(matcher.regex or "", re.IGNORECASE | re.DOTALL, "regex")
        ok = pattern.fullmatch(value) is not None
        return None if ok else f"{shorten(value)} does not match /{matcher.regex}/"
    if kind == "path":
        ok = normalize_path(value) == normalize_path(matcher.path or "")
        return None if ok else f"expected path {matcher.path!r}, got {shorten(value)}"
    # derived_from_step: the value must come from that step's result.
    step = matcher.derived_from_step
    assert step is not None
    source = prior.get(step)
    if source is None:
        return f"step {step} was not done, so nothing could be derived from it"
    # A path is compared in its normal form; a URL (or any plain value) as written.
    looks_like_path = ("/" in value or "." in value) and "://" not in value
    needle = normalize_path(value) if looks_like_path else value.strip()
    if not needle or needle.lower() not in source.result_text.lower():
        return f"{shorten(value)} does not come from the result of step {step}"
    return None
