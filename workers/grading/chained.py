"""Chained values: does an argument come, whole, from an earlier step's result?

The rule (docs/writing-scenarios.md, "Chained values"): the value must equal a whole value that a call of the
source step returned before this call was made.

- A result that is JSON offers every scalar in it and every key of its objects, and inside a
  string of it, any run of text bounded as in a text result (a city in a note, the number in
  "Budget: 120000 EUR").
- A text result offers any run of text with a boundary at both ends: the start or end of the
  text, or a character that cannot continue the value. Letters, digits and `_` continue it, and
  so do `-./@` when a letter or digit follows them. So `msg-1040` is in "read msg-1040, then"
  and `/a/b.md` in "/a/b.md:12: a line", but `msg-104` is not, nor `budget` in
  `/Documents/budget-q1.md`.
- Numbers are compared by value (`30` matches "a 30-minute call" and `30.0`); a value that
  looks like a path is compared in its normal form (`Documents/a.md` matches `/Documents/a.md`).
- Text is compared as written: case matters, as it does for the ids and paths chained values are.

A chained matcher may also say *which* value it is, so that a value found elsewhere in the
result (an addend where the sum is meant) does not pass: `from_key` names a JSON key (found at
any depth) or a path from the top (`order.total`, `items[0].id`); `from_regex` is a regular
expression searched in the result's text, whose first capture group (or whole match) is the
value. Only the values so selected are offered, and a key's value is offered whole: the
scalar under the key, or one of the scalars inside the array or object there, never a run of
a string (`"Status: paused"` is not the observation `"Status: paused since May"`). A result
that is not JSON has no keys; the reason says so rather than "not the value".

A result with structured content (`structuredContent`, what a tool with an output schema
returns beside its text) offers its values too: the text is read first, then the structured
content as JSON, by a plain chained matcher and by `from_key`; `from_regex` reads the text only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_farm.schema import (
    ToolCallRecord,
    budgeted_finditer,
    canonical_json,
    compiled_pattern,
)
from mcp_farm.schema.parse.paths import value_at as value_at  # state probes read it here
from mcp_farm.schema.parse.paths import values_at
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


def _by_key(value: Any, key: str) -> Iterator[Any]:
    """Every value held under `key`, at any depth."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if key in item:
                yield item[key]
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _selected(result: str, key: str) -> list[Any]:
    """The values `from_key` picks out of a result; none when it is not JSON."""
    try:
        decoded = loads(result)
    except UnreadableJson:
        return []
    if "." in key or "[" in key:
        return list(values_at(decoded, key))
    return list(_by_key(decoded, key))


def _scalars(value: Any) -> Iterator[Any]:
    """A decoded value itself when it is a scalar, else every scalar inside it (not keys)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif item is not None:
            yield item


def _captured(result: str, pattern: str) -> list[str]:
    """What `from_regex` captures in a result's text: group 1 of every match, or the match."""
    grouped = compiled_pattern(pattern, field="from_regex").groups > 0
    found = budgeted_finditer(pattern, result, field="from_regex")
    return [m.group(1) if grouped else m.group() for m in found]


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


def _in_json(value: str | float, decoded: Any) -> bool:
    """Whether `value` is a leaf of a decoded JSON value, or a bounded run of a string in it."""
    return any(
        _same(value, leaf) or (isinstance(leaf, str) and _in_text(value, leaf))
        for leaf in _leaves(decoded)
    )


def found_in(value: str | float, result: str) -> bool:
    """Whether `value` is a whole value of one result (JSON, or text)."""
    try:
        decoded = loads(result)
    except UnreadableJson:
        return _in_text(value, result)
    if isinstance(decoded, dict | list):
        return _in_json(value, decoded)
    return _in_text(value, result)  # a bare JSON scalar is read as text: `42`, `"id"`


def found_as(
    value: str | float, result: str, key: str | None = None, pattern: str | None = None
) -> bool:
    """`found_in`, or with a selector: whether `value` is the value the selector picks."""
    if key is not None:
        return any(
            _same(value, scalar) for picked in _selected(result, key) for scalar in _scalars(picked)
        )
    if pattern is not None:
        return any(_same(value, picked) for picked in _captured(result, pattern))
    return found_in(value, result)


def derived_problem(
    value: Any, step: int, chain: Chain, key: str | None = None, pattern: str | None = None
) -> str | None:
    """None when `value` comes from a result of step `step` obtained before the call judged
    (the value under `key`, or captured by `pattern`, when one is given)."""
    done = chain.results.get(step, [])
    if not done:
        return f"step {step} was not done, so nothing could be derived from it"
    if not isinstance(value, str) and _number(value) is None:
        return f"expected a text or number from the result of step {step}, got {shorten(value)}"
    earlier = [c for c in done if chain.before is None or c.index < chain.before]
    if any(found_as(value, c.whole_result, key, pattern) for c in earlier):
        return None
    if pattern is None and any(found_as(value, s, key) for s in _structured(earlier)):
        return None
    if key is not None:
        return _key_problem(value, step, key, [c.whole_result for c in earlier])
    if pattern is not None:
        return f"{shorten(value)} is not what /{pattern}/ captures in the result of step {step}"
    return f"{shorten(value)} is not a whole value of the result of step {step}"


def _structured(calls: Sequence[ToolCallRecord]) -> Iterator[str]:
    """The structured content (`structuredContent`) of each call that returned one, as JSON:
    chained values and `from_key` read it after the text (docs/conversations.md)."""
    for call in calls:
        try:
            whole = loads(call.whole_json) if call.whole_json else {}
        except UnreadableJson:
            continue
        if isinstance(whole, dict) and whole.get("structured") is not None:
            yield canonical_json(whole["structured"])


def key_problem(result: str, key: str) -> str | None:
    """Why `from_key` picks nothing in a result: no such key, or a result that is not a JSON
    object or array at all (a server printing a Python repr, say); None when it picks a value."""
    if _selected(result, key):
        return None
    decoded = _decoded(result)
    if isinstance(decoded, dict | list):
        return f"holds no key {key!r}, so from_key picks nothing"
    return (
        f"is not a JSON object or array ({shorten(result)}), so from_key {key!r} picks "
        "nothing; from_regex reads a text result"
    )


def _key_problem(value: Any, step: int, key: str, results: list[str]) -> str:
    """Why `value` is not the value `from_key` picks in any of the results of step `step`."""
    problems = [key_problem(r, key) for r in results]
    if not results or any(p is None for p in problems):
        return f"{shorten(value)} is not the value of {key!r} in the result of step {step}"
    # Not JSON is the graver news: a key that is missing could be there another time.
    worst = next((p for p in problems if p and p.startswith("is not")), problems[0])
    return f"the result of step {step} {worst}"


def _decoded(result: str) -> Any | None:
    try:
        return loads(result)
    except UnreadableJson:
        return None
