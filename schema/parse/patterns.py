"""Checks for the JSON schemas a scenario carries (its regular expressions: `regexes`).

A scenario is loaded long before it is graded. A schema that cannot be applied must fail the
load, naming the file and the field, instead of stopping a sweep half-way with a traceback when
the first trial is graded.
"""

from __future__ import annotations

from typing import Any

from jsonschema import (
    Draft3Validator,
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
    SchemaError,
)
from jsonschema.validators import validator_for
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable  # jsonschema's own dependency (>= 4.18)
from referencing.jsonschema import DRAFT202012

from mcp_farm.schema.parse.regexes import regex_problem

# Values a schema is tried on at load time: a schema that refers to itself without ever
# constraining anything (`{"$ref": "#"}`) recurses forever on the first of them.
_PROBES: tuple[Any, ...] = (None, True, 0, 0.5, "", [], {})

# The drafts jsonschema knows, by the URI a schema names in `$schema` (trailing `#` optional).
# Any other `$schema` would be validated by a guessed draft, with a warning: refused instead.
_DRAFTS = {
    str(v.META_SCHEMA.get("$id", v.META_SCHEMA.get("id", ""))).rstrip("#")
    for v in (
        Draft3Validator,
        Draft4Validator,
        Draft6Validator,
        Draft7Validator,
        Draft201909Validator,
        Draft202012Validator,
    )
}


def json_schema_problem(schema: dict[str, Any]) -> str | None:
    """Why `schema` is not a JSON schema the matchers can apply, or None when it is.

    Checked: the schema against its draft's metaschema (which also compiles its `pattern`s),
    every `$ref` resolves inside the schema (nothing is fetched), it does not recurse
    without end, no `pattern` in it holds a repeat inside a repeat (see `regexes`), and no
    name of `patternProperties` is matched where the budget cannot reach (`UNBUDGETED`).
    """
    dialect = schema.get("$schema")
    if dialect is not None and (not isinstance(dialect, str) or dialect.rstrip("#") not in _DRAFTS):
        return f"invalid JSON schema: unknown $schema {dialect!r}; name a JSON Schema draft"
    try:
        cls = validator_for(schema)
        cls.check_schema(schema)
        resolver = Registry().with_resource("", Resource.from_contents(schema, DRAFT202012))
        for ref in _refs(schema):
            resolver.resolver().lookup(ref)
        validator = cls(schema)
        for probe in _PROBES:
            validator.is_valid(probe)
    except SchemaError as exc:
        return f"invalid JSON schema: {exc.message}"
    except Unresolvable as exc:
        return f"invalid JSON schema: unresolvable $ref: {exc}"
    except RecursionError:
        return "invalid JSON schema: it refers to itself without end"
    except OverflowError as exc:  # a `pattern` whose repeat count is past the engine's limit
        return f"invalid JSON schema: {exc}"
    for pattern in _patterns(schema):
        problem = regex_problem(pattern)
        if problem:
            return f"invalid JSON schema: pattern {pattern!r}: {problem}"
    if _keywords(schema) >= {"unevaluatedProperties", "patternProperties"}:
        return UNBUDGETED
    return None


UNBUDGETED = (
    "invalid JSON schema: `unevaluatedProperties` with `patternProperties` is not supported "
    "(jsonschema matches those names with Python's `re`, which the farm cannot stop when it "
    "backtracks without end): use `additionalProperties`"
)
"""Why a schema that would match a pattern outside the farm's budget is refused."""


def _keywords(schema: Any) -> set[str]:
    """Every keyword a schema uses, at any depth (data keywords' contents left out)."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.update(str(k) for k in item)
            stack.extend(v for k, v in item.items() if k not in _DATA)
        elif isinstance(item, list):
            stack.extend(item)
    return found


_DATA = frozenset({"const", "enum", "default", "examples"})
"""Keywords whose values are data, not schemas: a `pattern` key inside them is no pattern."""


def _patterns(schema: Any) -> list[str]:
    """Every `pattern` and `patternProperties` name in a schema, at any depth."""
    found: list[str] = []
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            pattern, named = item.get("pattern"), item.get("patternProperties")
            if isinstance(pattern, str):
                found.append(pattern)
            if isinstance(named, dict):
                found.extend(str(k) for k in named)
            stack.extend(v for k, v in item.items() if k not in _DATA)
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _refs(schema: Any) -> list[str]:
    """Every `$ref` string in a schema, at any depth."""
    found: list[str] = []
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str):
                found.append(ref)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found
