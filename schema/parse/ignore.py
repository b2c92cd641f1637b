"""Ignore rules: values that change on every call (a timestamp, a random id), named by JSON
path or regular expression, left out where results are compared and calls matched.

A suite or a server definition states them (`ignore: {paths: [...], patterns: [...]}`); replay
diffs and cassette matching apply the same rules (docs/replay.md, docs/cassettes.md). An ignored
value is replaced by IGNORED rather than removed, so a field that appears or disappears still
shows as a change.

JSON paths are a small, strict subset: `$` then any of `.name`, `['name']`, `[3]`, `[*]`, `.*`
and `..name` (that name at any depth).
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from mcp_farm.schema.parse.regexes import (
    MATCH_BUDGET_S,
    PatternTimeout,
    checked_regex,
    compiled_pattern,
)
from mcp_farm.schema.parse.strict import Strict

IGNORED = "<ignored>"
"""What an ignored value, or an ignored part of a text, is replaced by."""

Step = tuple[str, str | int]
"""One step of a JSON path: ("key", name), ("index", n), ("any", ""), or ("deep", name)."""

_STEP = re.compile(
    r"\.\.(?P<deep>[A-Za-z_][\w-]*)"
    r"|\.(?P<key>[A-Za-z_][\w-]*)"
    r"|\.\*|\[\*\]"
    r"|\[(?P<index>-?\d+)\]"
    r"|\[(?P<quote>['\"])(?P<quoted>[^'\"]+)(?P=quote)\]"
)


def json_path(path: str) -> list[Step]:
    """The steps of a JSON path; ValueError naming the path and where it stops making sense."""
    if not path.startswith("$"):
        raise ValueError(f"JSON path {path!r} must start with `$`")
    steps: list[Step] = []
    at = 1
    while at < len(path):
        found = _STEP.match(path, at)
        if found is None:
            raise ValueError(
                f"JSON path {path!r}: cannot read {path[at:]!r} (use `.name`, `['name']`, "
                "`[0]`, `[*]`, `.*` or `..name`)"
            )
        if found["deep"]:
            steps.append(("deep", found["deep"]))
        elif found["key"] or found["quoted"]:
            steps.append(("key", found["key"] or found["quoted"]))
        elif found["index"] is not None:
            steps.append(("index", int(found["index"])))
        else:
            steps.append(("any", ""))
        at = found.end()
    if not steps:
        raise ValueError(f"JSON path {path!r} names the whole value: ignore the call instead")
    return steps


def _replaced(value: Any, steps: list[Step]) -> Any:
    """`value` with what `steps` reach replaced by IGNORED (a copy where anything changed)."""
    if not steps:
        return IGNORED
    (kind, name), rest = steps[0], steps[1:]
    if kind == "deep":
        return _deep(value, str(name), rest)
    if isinstance(value, dict):
        if kind == "any":
            return {k: _replaced(v, rest) for k, v in value.items()}
        if kind == "key" and name in value:
            return {**value, str(name): _replaced(value[str(name)], rest)}
    if isinstance(value, list):
        if kind == "any":
            return [_replaced(v, rest) for v in value]
        if kind == "index" and isinstance(name, int) and -len(value) <= name < len(value):
            items = list(value)
            items[name] = _replaced(items[name], rest)
            return items
    return value


def _deep(value: Any, name: str, rest: list[Step]) -> Any:
    if isinstance(value, dict):
        out = {k: _deep(v, name, rest) for k, v in value.items()}
        if name in value:
            out[name] = _replaced(value[name], rest)
        return out
    if isinstance(value, list):
        return [_deep(v, name, rest) for v in value]
    return value


def _checked_path(path: str) -> str:
    json_path(path)
    return path


class IgnoreRules(Strict):
    """Values a server gives differently every time, left out of replay diffs and cassette
    matching. They apply to a result's structured content, its text (as JSON where it is
    JSON), and a call's arguments alike."""

    paths: list[Annotated[str, AfterValidator(_checked_path)]] = Field(default_factory=list)
    """JSON paths of values to ignore (`$.created_at`, `$.items[*].id`, `$..request_id`)."""
    patterns: list[Annotated[str, AfterValidator(checked_regex)]] = Field(default_factory=list)
    """Regular expressions (Python `re` syntax) whose matches in any text, or in any string of
    a JSON value, are ignored (`\\d{4}-\\d{2}-\\d{2}T[\\d:.]+Z?`)."""

    def __bool__(self) -> bool:
        return bool(self.paths or self.patterns)

    def joined(self, other: IgnoreRules | None) -> IgnoreRules:
        """Both rule sets, each rule once (a suite's and its server's)."""
        if not other:
            return self
        return IgnoreRules(
            paths=list(dict.fromkeys([*self.paths, *other.paths])),
            patterns=list(dict.fromkeys([*self.patterns, *other.patterns])),
        )

    def in_text(self, text: str) -> str:
        """`text` with every match of a pattern replaced by IGNORED."""
        for pattern in self.patterns:
            try:
                text = compiled_pattern(pattern, field="ignore.patterns").sub(
                    IGNORED, text, timeout=MATCH_BUDGET_S
                )
            except TimeoutError:
                raise PatternTimeout("ignore.patterns", pattern, len(text)) from None
        return text

    def applied(self, value: Any) -> Any:
        """A JSON value with every ignored value replaced: paths first, then patterns in each
        string (keys are left as they are)."""
        for path in self.paths:
            value = _replaced(value, json_path(path))
        return self._strings(value) if self.patterns else value

    def _strings(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.in_text(value)
        if isinstance(value, dict):
            return {k: self._strings(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._strings(v) for v in value]
        return value

    def in_result(self, text: str) -> str:
        """A result's text with the rules applied, as `text_lines` gives it, in one string."""
        return "\n".join(self.text_lines(text)) if self else text

    def text_lines(self, text: str) -> list[str]:
        """A result's text as lines to compare: JSON (an object or a list) as indented JSON
        with sorted keys and the rules applied to it; any other text with the patterns
        applied."""
        try:
            parsed = json.loads(text)
        except ValueError:
            return self.in_text(text).splitlines()
        if not isinstance(parsed, dict | list):
            return self.in_text(text).splitlines()
        shown = json.dumps(self.applied(parsed), indent=2, sort_keys=True, ensure_ascii=False)
        return shown.splitlines()
