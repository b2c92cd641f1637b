"""JSON Schema validation with each schema checked and compiled once per process.

`jsonschema.validate` checks the schema against its metaschema and builds a validator on every
call; grading does that for each tool call of each trial with the same few tool schemas, and it
was a quarter of a trial's grading time. Here a schema is checked and compiled the first time it
is seen (keyed by its canonical JSON) and the same validator judges every later value, with the
same errors `jsonschema.validate` raises.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

MAX_SCHEMAS = 512
"""Compiled schemas kept per process; past that the cache starts over (servers list a few
dozen tools, so it never fills in practice)."""

_compiled: dict[str, Validator] = {}


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
    validator: Validator = cls(copy.deepcopy(schema))
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
