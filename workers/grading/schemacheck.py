"""JSON Schema validation with each schema checked and compiled once per process.

`jsonschema.validate` checks the schema against its metaschema and builds a validator on every
call; grading does that for each tool call of each trial with the same few tool schemas, and it
was a quarter of a trial's grading time. Here a schema is checked and compiled the first time it
is seen (keyed by its canonical JSON) and the same validator judges every later value, with the
same errors `jsonschema.validate` raises.

A schema's regular expressions (a scenario's or a server's: `pattern`, and the names of
`patternProperties`, which `additionalProperties` consults too) are matched within the farm's
time budget for patterns (`mcp_farm.schema.parse.regexes`): past it, PatternTimeout, never a
hung grader. jsonschema's `unevaluatedProperties` matches the names of `patternProperties`
beside it with `re`: a scenario's schema with both is refused at load (`json_schema_problem`);
a server's own tool schema is the server's to write, and is applied as it is.
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


def _named(pattern: str, name: str) -> bool:
    return budgeted_search(pattern, name, field="JSON schema patternProperties") is not None


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """jsonschema's `patternProperties`, with each name matched within the budget."""
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if _named(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(
    validator: Any, allowed: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    """jsonschema's `additionalProperties`, its `patternProperties` names matched within the
    budget (the keys come from the model's call)."""
    if not validator.is_type(instance, "object"):
        return
    listed, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    extras = sorted(
        (name for name in instance if name not in listed)
        if not patterns
        else (
            name
            for name in instance
            if name not in listed and not any(_named(p, name) for p in patterns)
        ),
        key=str,
    )
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        shown = ", ".join(repr(extra) for extra in extras)
        if patterns:
            regexes = ", ".join(repr(p) for p in sorted(patterns))
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{shown} {verb} not match any of the regexes: {regexes}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(
                f"Additional properties are not allowed ({shown} {verb} unexpected)"
            )


def _with_budget(cls: type[Validator]) -> type[Validator]:
    """The draft's validator class, its regular expressions (`pattern`, the names of
    `patternProperties`) matched within the budget."""
    found = _budgeted.get(cls)
    if found is None:
        keywords = {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
        }
        # jsonschema's `extend` has no annotations; it returns a validator class.
        found = _budgeted[cls] = extend(cls, keywords)  # type: ignore[no-untyped-call]
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
