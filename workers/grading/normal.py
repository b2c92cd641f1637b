"""Normal forms the matchers compare text in, and the one equality `exact` and `one_of` use."""

from __future__ import annotations

import posixpath
from typing import Any

from mcp_farm.workers.grading.typed import (
    UNTYPED,
    Typed,
)


def normalize(text: str) -> str:
    """Lower case, whitespace collapsed: `Q1  Budget` and `q1 budget` agree."""
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


def _same_number(value: Any, expected: Any, typed: Typed) -> bool | None:
    """Two numbers compared as the schema types their place; None when either is no number."""
    if not (_is_number(value) and _is_number(expected)):
        return None
    rule = typed.numbers()
    if rule == "held" and type(value) is not type(expected):
        return False
    if rule == "integer" and not isinstance(value, int):
        return False  # `5.0` where the tool asks for an integer
    return bool(value == expected)


def same_json(value: Any, expected: Any, fold: bool = False, typed: Typed = UNTYPED) -> bool:
    """Whether two JSON values are equal with their types held at every depth.

    Python's `==` says `True == 1`, `1 == 1.0` and `[True, 2] == [1, 2]`; a tool sees each of
    those as a different value, so here a boolean is never a number and arrays and objects are
    compared item by item under the same rule. Numbers compare as the tool's schema types
    their place (`typed`): by value for `number` (`0` is `0.0`), integers only for `integer`
    (`5.0` is not `5`), and with their JSON types held where no schema types the place. With
    `fold`, strings are compared in their `normalize` form, at any depth.
    """
    number = _same_number(value, expected, typed)
    if number is not None:
        return number
    if type(value) is not type(expected):
        return False
    if isinstance(value, str):
        return normalize(value) == normalize(expected) if fold else value == expected
    if isinstance(value, list):
        return len(value) == len(expected) and all(
            same_json(a, b, fold, typed.item(i))
            for i, (a, b) in enumerate(zip(value, expected, strict=True))
        )
    if isinstance(value, dict):
        return value.keys() == expected.keys() and all(
            same_json(value[k], expected[k], fold, typed.key(k)) for k in value
        )
    return bool(value == expected)
