"""JSON Schema validation with each schema checked and compiled once per process.

`jsonschema.validate` checks the schema against its metaschema and builds a validator on every
call; grading does that for each tool call of each trial with the same few tool schemas, and it
was a quarter of a trial's grading time. Here a schema is checked and compiled the first time it
is seen (keyed by its canonical JSON) and the same validator judges every later value, with the
same errors `jsonschema.validate` raises.

A schema's `pattern` (a scenario's or a server's) is matched within the farm's time budget for
patterns (`mcp_farm.schema.parse.regexes`): past it, PatternTimeout, never a hung grader.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema.validators import extend, validator_for

from mcp_farm.schema import budgeted_search

MAX_SCHEMAS = 512
"""Compiled schemas kept per process; past that the cache starts over (servers list a few
dozen tools, so it never fills in practice)."""

_compiled: dict[str, Validator] = {}
_budgeted: dict[type[Validator], type[Validator]] = {}


def _pattern(
    validator: Validator, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """jsonschema's `pattern` keyword, word for word, with the match under the budget."""
    if validator.is_type(instance, "string") and not budgeted_search(
        pattern, instance, field="JSON schema pattern"
    ):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _with_budget(cls: type[Validator]) -> type[Validator]:
    """The draft's validator class, its `pattern` keyword matched within the budget."""
    found = _budgeted.get(cls)
    if found is None:
        # jsonschema's `extend` has no annotations; it returns a validator class.
        found = _budgeted[cls] = extend(cls, {"pattern": _pattern})  # type: ignore[no-untyped-call]
    return found


def _validator(schema: dict[str, Any]) -> Validator:
    try:
        key: str | None = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        key = None  # no JSON form to key it by (a YAML date, say): compiled for this call only
    found = _compiled.get(key) if key is not None else None
    if found is not None:
        return found
    cls = validator_for(schema)
    cls.check_schema(schema)  # SchemaError: the caller says whose schema it was
    # A copy: the caller's dict may be changed later, the cached validator must not be.
    validator: Validator = _with_budget(cls)(copy.deepcopy(schema))
    if key is not None:
        if len(_compiled) >= MAX_SCHEMAS:
            _compiled.clear()
        _compiled[key] = validator
    return validator


def schema_error(value: Any, schema: dict[str, Any]) -> ValidationError | None:
    """The error `jsonschema.validate(value, schema)` would raise for `value`, or None when it
    fits. A schema that cannot be applied raises as there (SchemaError, Unresolvable,
    RecursionError)."""
    error = best_match(_validator(schema).iter_errors(value))
    return error if isinstance(error, ValidationError) else None
