"""Parameter matchers: does one argument value satisfy what the scenario expects?"""

from __future__ import annotations

import posixpath
import re
from typing import Any

import jsonschema

from schema import ParamMatcher, ToolCallRecord


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


def check(matcher: ParamMatcher, value: Any, prior: dict[int, ToolCallRecord]) -> str | None:
    """None when the value satisfies the matcher, else the reason in words."""
    kind = matcher.kind
    if kind == "any":
        return None
    if kind == "exact":
        ok = value == matcher.exact and type(value) is type(matcher.exact)
        return None if ok else f"expected {matcher.exact!r}, got {value!r}"
    if kind == "number":
        assert matcher.number is not None
        ok = _is_number(value) and abs(float(value) - matcher.number) <= matcher.tolerance
        return None if ok else f"expected {matcher.number}±{matcher.tolerance}, got {value!r}"
    if kind == "json_schema":
        try:
            jsonschema.validate(value, matcher.json_schema or {})
        except jsonschema.ValidationError as exc:
            return f"does not fit the schema: {exc.message}"
        return None
    if kind == "one_of":
        options = matcher.one_of or []
        hit = any(
            normalize(value) == normalize(o)
            if isinstance(value, str) and isinstance(o, str)
            else value == o
            for o in options
        )
        return None if hit else f"expected one of {options!r}, got {value!r}"
    if not isinstance(value, str):
        return f"expected a string, got {type(value).__name__} {value!r}"
    return _check_text(matcher, kind, value, prior)


def _check_text(
    matcher: ParamMatcher, kind: str, value: str, prior: dict[int, ToolCallRecord]
) -> str | None:
    if kind == "normalized":
        ok = normalize(value) == normalize(matcher.normalized or "")
        return None if ok else f"expected {matcher.normalized!r}, got {value!r}"
    if kind == "regex":
        ok = re.fullmatch(matcher.regex or "", value, re.IGNORECASE | re.DOTALL) is not None
        return None if ok else f"{value!r} does not match /{matcher.regex}/"
    if kind == "path":
        ok = normalize_path(value) == normalize_path(matcher.path or "")
        return None if ok else f"expected path {matcher.path!r}, got {value!r}"
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
        return f"{value!r} does not come from the result of step {step}"
    return None
