"""Chained values: does an argument come, whole, from an earlier step's result?

The rule (README, "Chained values"): the value must equal a whole value that a call of the
source step returned before this call was made.

- A result that is JSON offers every scalar in it and every key of its objects.
- A text result offers any run of text with a boundary at both ends: the start or end of the
  text, or a character that cannot continue the value. Letters, digits and `_` continue it, and
  so do `-./@` when a letter or digit follows them. So `msg-1040` is in "read msg-1040, then"
  and `/a/b.md` in "/a/b.md:12: a line", but `msg-104` is not, nor `budget` in
  `/Documents/budget-q1.md`.
- Numbers are compared by value (`30` matches "a 30-minute call" and `30.0`); a value that
  looks like a path is compared in its normal form (`Documents/a.md` matches `/Documents/a.md`).
- Text is compared as written: case matters, as it does for the ids and paths chained values are.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_farm.schema import ToolCallRecord
from mcp_farm.workers.grading.normal import normalize_path
from mcp_farm.workers.model.safejson import (
    UnreadableJson,
    loads,
    shorten,
)

# A number standing on its own in text: not glued to a letter, digit, `_` or decimal point.
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w]|\.\d)")
# Characters that continue a value when a letter or digit follows them (`a.md`, `msg-1`). A
# colon does not: it separates more often than it joins ("path:12:", "Commit: a5ce332").
_JOINERS = "-./@"


@dataclass(frozen=True)
class Chain:
    """What chained matchers may look into while one call is judged."""

    results: Mapping[int, Sequence[ToolCallRecord]] = field(default_factory=dict)
    """Per expected step, every call that met it."""
    before: int | None = None
    """Only calls with a smaller index count (the call being judged); None: all of them."""


def _number(value: Any) -> float | None:
    """A JSON number or numeric text as a finite float; None for anything else (booleans,
    text that is no number, an integer too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def _looks_like_path(text: str) -> bool:
    return "/" in text and "://" not in text


def _leaves(value: Any) -> Iterator[Any]:
    """Every scalar of a decoded JSON value and every key of its objects."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield from item.keys()
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif item is not None:
            yield item


def _same(value: str | float, leaf: Any) -> bool:
    """Whether a JSON leaf is the value, whole."""
    if not isinstance(value, str) or not isinstance(leaf, str):
        # A number on either side: compared by value (`30` and `"30"` and `30.0` agree).
        number = _number(value)
        return number is not None and _number(leaf) == number
    if _looks_like_path(value) and _looks_like_path(leaf):
        return normalize_path(value) == normalize_path(leaf)
    return value.strip() == leaf.strip()


def _bounded(needle: str, text: str) -> bool:
    """Whether `needle` occurs in `text` with a boundary at both ends (see the module doc)."""
    joiners = re.escape(_JOINERS)
    pattern = rf"(?<!\w)(?<!\w[{joiners}]){re.escape(needle)}(?!\w)(?![{joiners}]\w)"
    return re.search(pattern, text) is not None


def _path_tokens(text: str) -> Iterator[str]:
    for word in text.split():
        token = word.strip("\"'`()[]{}<>,;").rstrip(".:")
        if _looks_like_path(token):
            yield token


def _in_text(value: str | float, text: str) -> bool:
    if not isinstance(value, str):
        number = _number(value)
        return number is not None and any(
            _number(m.group()) == number for m in _NUMBER.finditer(text)
        )
    needle = value.strip()
    if not needle:
        return False
    if _bounded(needle, text):
        return True
    if _NUMBER.fullmatch(needle):
        return _in_text(float(needle), text)
    if _looks_like_path(needle):
        return any(normalize_path(t) == normalize_path(needle) for t in _path_tokens(text))
    return False


def found_in(value: str | float, result: str) -> bool:
    """Whether `value` is a whole value of one result (JSON, or text)."""
    try:
        decoded = loads(result)
    except UnreadableJson:
        return _in_text(value, result)
    if isinstance(decoded, dict | list):
        return any(_same(value, leaf) for leaf in _leaves(decoded))
    return _in_text(value, result)  # a bare JSON scalar is read as text: `42`, `"id"`


def derived_problem(value: Any, step: int, chain: Chain) -> str | None:
    """None when `value` comes from a result of step `step` obtained before the call judged."""
    done = chain.results.get(step, [])
    if not done:
        return f"step {step} was not done, so nothing could be derived from it"
    if not isinstance(value, str) and _number(value) is None:
        return f"expected a text or number from the result of step {step}, got {shorten(value)}"
    earlier = [c for c in done if chain.before is None or c.index < chain.before]
    if any(found_in(value, c.result_text) for c in earlier):
        return None
    return f"{shorten(value)} is not a whole value of the result of step {step}"
