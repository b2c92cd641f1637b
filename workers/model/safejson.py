"""Reading JSON a model (or an endpoint) wrote, without ever raising on what it wrote.

Model output is adversarial input: `[` repeated a hundred thousand times makes `json.loads`
recurse until Python gives up, an integer of five thousand digits trips the interpreter's
conversion limit, `NaN` and `1e999` are not JSON numbers, and `"\\ud800"` decodes into a string
UTF-8 cannot encode. Everything here maps such input to `UnreadableJson` (a message fit for a
format error), and `wire_problem` says why an already-decoded value could not be sent to a tool
as JSON.
"""

from __future__ import annotations

import json
import math
import re
import reprlib
from typing import Any

from mcp_farm.schema.ids import is_unicode
from mcp_farm.workers.errors import WorkerError

MAX_DEPTH = 32
"""Nesting a model's JSON may have. Real tool arguments stay under ten levels; the limit keeps
every later consumer (json, jsonschema, the MCP SDK) far from Python's recursion limit."""

MAX_INT_BITS = 14_000
"""Integers longer than this (about 4,200 digits) cannot be written as decimal text by Python."""

# An escape (two characters, so an escaped quote is never a quote), a quote or a bracket: all
# that measuring nesting needs. Every match is a fixed width, so scanning stays linear however
# the text is built (a pattern matching whole strings re-scans an unterminated one from each
# of its escaped quotes).
_TOKENS = re.compile(r'\\.|["\[\]{}]', re.DOTALL)

_SHORT = reprlib.Repr()
_SHORT.maxstring = 80
_SHORT.maxother = 80


class UnreadableJson(WorkerError):
    """Text that does not decode into a usable JSON value; the message says why."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_STANDARD = json.JSONDecoder(parse_constant=_reject_constant)
_LENIENT = json.JSONDecoder()


def depth_exceeds(text: str, limit: int) -> bool:
    """Whether the first JSON value in `text` nests deeper than `limit` (strings ignored)."""
    depth = 0
    in_string = False
    for token in _TOKENS.finditer(text):
        mark = token.group()
        if mark == '"':
            in_string = not in_string
        elif in_string or len(mark) == 2:
            continue
        elif mark in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
            if depth <= 0:
                return False  # the first value is closed; what follows is not its concern
    return False


def raw_decode(text: str, max_depth: int = MAX_DEPTH, *, lenient: bool = False) -> tuple[Any, int]:
    """The JSON value at the start of `text` and where it ends, like `JSONDecoder.raw_decode`.

    Raises UnreadableJson for malformed or too deeply nested JSON, and (unless `lenient`) for
    the non-standard constants NaN and Infinity. Strings are returned as decoded, lone
    surrogates included: `wire_problem` is the check for values that must travel on.
    """
    if depth_exceeds(text, max_depth):
        raise UnreadableJson(f"JSON nested deeper than {max_depth} levels")
    try:
        return (_LENIENT if lenient else _STANDARD).raw_decode(text)
    except json.JSONDecodeError as exc:
        raise UnreadableJson(f"unparseable JSON: {exc.msg} at {exc.pos}") from None
    except (ValueError, RecursionError) as exc:
        # ValueError: NaN/Infinity (rejected above) or an integer past Python's digit limit.
        raise UnreadableJson(f"unparseable JSON: {exc}") from None


def loads(text: str, max_depth: int = MAX_DEPTH, *, lenient: bool = False) -> Any:
    """`json.loads` that raises only UnreadableJson (see `raw_decode`)."""
    value, end = raw_decode(text, max_depth, lenient=lenient)
    if text[end:].strip():
        raise UnreadableJson(f"unparseable JSON: extra data at {end}")
    return value


def wire_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """Why `value` could not travel as standard JSON text, or None when it can.

    Only objects with string keys, arrays, strings that are valid Unicode, finite numbers,
    booleans and null qualify, nested at most `max_depth` levels.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                return f"JSON nested deeper than {max_depth} levels"
            if isinstance(item, dict):
                for key in item:
                    if not isinstance(key, str):
                        return f"the key {shorten(key)} is not a string"
                    if not is_unicode(key):
                        return f"the key {shorten(key)} holds a lone surrogate, which is not text"
                children = list(item.values())
            else:
                children = item
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(item, str):
            if not is_unicode(item):
                return f"the string {shorten(item)} holds a lone surrogate, which is not text"
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if item.bit_length() > MAX_INT_BITS:
                return f"an integer of {item.bit_length()} bits is too long to write"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"{item} is not a JSON number"
        else:
            return f"a {type(item).__name__} is not a JSON value"
    return None


def shorten(value: Any) -> str:
    """A short repr for messages; never raises (an integer too long to print is described)."""
    try:
        return _SHORT.repr(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__}>"


def as_json_text(value: Any) -> str:
    """`value` as compact JSON text for a transcript, whatever it holds; never raises."""
    try:
        return json.dumps(value, ensure_ascii=False, skipkeys=True, default=repr)
    except (ValueError, TypeError, RecursionError):
        return shorten(value)


def arguments_key(name: str, arguments: Any) -> str:
    """A key equal for identical calls (tool name and arguments), whatever the arguments hold:
    repeated calls are counted by it."""
    try:
        text = json.dumps(arguments, sort_keys=True, default=repr)
    except (ValueError, TypeError, RecursionError):
        # Keys of mixed types cannot be sorted; unsorted text is still the same for equal calls.
        text = as_json_text(arguments)
    return name + text
