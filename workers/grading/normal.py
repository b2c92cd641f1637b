"""Normal forms the matchers compare text in, and the one equality `exact` and `one_of` use."""

from __future__ import annotations

import posixpath
from typing import Any


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


def same_json(value: Any, expected: Any, fold: bool = False) -> bool:
    """Whether two JSON values are equal with their types held at every depth.

    Python's `==` says `True == 1`, `1 == 1.0` and `[True, 2] == [1, 2]`; a tool sees each of
    those as a different value, so here a boolean is never a number, an integer is never a
    float (`5.0` is not `5`), and arrays and objects are compared item by item under the same
    rule. With `fold`, strings are compared in their `normalize` form, at any depth.
    """
    if type(value) is not type(expected):
        return False
    if isinstance(value, str):
        return normalize(value) == normalize(expected) if fold else value == expected
    if isinstance(value, list):
        return len(value) == len(expected) and all(
            same_json(a, b, fold) for a, b in zip(value, expected, strict=True)
        )
    if isinstance(value, dict):
        return value.keys() == expected.keys() and all(
            same_json(value[k], expected[k], fold) for k in value
        )
    return bool(value == expected)
