"""Checks for the patterns a scenario carries: regular expressions and JSON schemas.

A scenario is loaded long before it is graded. An expression or schema that cannot be applied
must fail the load, naming the file and the field, instead of stopping a sweep half-way with a
traceback when the first trial is graded.
"""

from __future__ import annotations

import re
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


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` is not a usable regular expression, or None when it is."""
    try:
        re.compile(pattern, re.IGNORECASE | re.DOTALL)
    except re.error as exc:
        return f"invalid regular expression: {exc}"
    except (OverflowError, RecursionError) as exc:
        # A repeat count past the engine's limit, or groups nested past Python's stack.
        return f"invalid regular expression: {type(exc).__name__}: {exc}"
    return None


def checked_regex(pattern: str | None) -> str | None:
    """`pattern` unchanged when it compiles (or is absent); ValueError naming the problem
    otherwise. The one body of every validator of a regex field."""
    problem = regex_problem(pattern) if pattern is not None else None
    if problem:
        raise ValueError(problem)
    return pattern


def json_schema_problem(schema: dict[str, Any]) -> str | None:
    """Why `schema` is not a JSON schema the matchers can apply, or None when it is.

    Checked: the schema against its draft's metaschema (which also compiles its `pattern`s),
    every `$ref` resolves inside the schema (nothing is fetched), and it does not recurse
    without end.
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
    return None


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
