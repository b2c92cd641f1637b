"""Mistakes about what a value is: a number written in another JSON form, and a value picked
with `from_key` cut to a part of itself.

Each is the ideal script with one value changed. A whole number sent as a float passes where
the tool's schema types the parameter `number` and is wrong where it says `integer` (or types it
not at all): the outcome is read, when the case runs, from the input schema the real server
lists (`outcome_by_schema`), so an outside suite's own tools need no table here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import (
    ParamMatcher,
    Scenario,
    Settings,
)
from mcp_farm.workers.grading.typed import Typed
from mcp_farm.workers.mcp.listing import tool_schemas
from tests.helpers import ideal_script
from tests.scenarios.mistakes import (
    Mistake,
    _replaced,
    _with_args,
)

BY_SCHEMA = "by-schema:"
"""An outcome the tool's input schema decides: `by-schema:TOOL:ARGUMENT`."""
_SCHEMAS: dict[tuple[str, tuple[str, ...]], dict[str, dict[str, Any]]] = {}
"""Tool schemas listed so far, per suite and servers: each server is started once per run."""


def _is_whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def number_form_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """Each whole number an `exact` argument expects, sent as a float (`5.0` for `5`): a pass
    for a `number` parameter, wrong_params for an `integer` one (decided by the schema)."""
    script = ideal_script(scenario)
    for j, step in enumerate(scenario.expect):
        example, tool = step.example or {}, step.names[0]
        for arg, matcher in step.params_for(tool).items():
            if matcher.kind != "exact" or not _is_whole_number(example.get(arg)):
                continue
            changed = _with_args(script, j, example | {arg: float(example[arg])})
            yield f"sends-{arg}-as-a-float", changed, f"{BY_SCHEMA}{tool}:{arg}"


def outcome_by_schema(outcome: str, suite: str, scenario: Scenario, settings: Settings) -> str:
    """The outcome a `by-schema:` mistake deserves, from the input schema the scenario's
    servers list for the tool: `pass` where the argument is a `number`, else `wrong_params`
    (an `integer`, or a place the schema does not type, where JSON types are held)."""
    if not outcome.startswith(BY_SCHEMA):
        return outcome
    tool, _, arg = outcome.removeprefix(BY_SCHEMA).partition(":")
    key = (suite, tuple(scenario.servers))
    if key not in _SCHEMAS:
        _SCHEMAS[key] = tool_schemas(load_suite(suite), scenario.servers, settings)
    schema = _SCHEMAS[key].get(tool)
    assert schema is not None, f"{scenario.id}: no server of the scenario lists {tool}"
    return "pass" if Typed.argument(schema, arg).numbers() == "value" else "wrong_params"


def _key_spots(matcher: ParamMatcher, value: Any) -> Iterator[list[int | str]]:
    """Paths (inside the example value) of the texts a `from_key` matcher picks."""
    while matcher.optional is not None:
        matcher = matcher.optional
    if matcher.from_key is not None:
        if isinstance(value, str) and " " in value.strip():
            yield []
        return
    if matcher.keys is not None and isinstance(value, dict):
        for key, each in matcher.keys.items():
            if key in value:
                yield from ([key, *p] for p in _key_spots(each, value[key]))
    if isinstance(value, list):
        if isinstance(matcher.items, list):
            for i, (each, item) in enumerate(zip(matcher.items, value, strict=False)):
                yield from ([i, *p] for p in _key_spots(each, item))
        elif matcher.items is not None:
            for i, item in enumerate(value):
                yield from ([i, *p] for p in _key_spots(matcher.items, item))


def _first_words(text: str) -> str:
    """The first half of the words of a text: a part of it that ends at a word boundary."""
    words = text.split()
    return " ".join(words[: max(1, len(words) // 2)])


def key_part_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """Each text a step takes with `from_key`, cut to its first words (`"Status: paused"` for
    `"Status: paused since May"`): a bounded part of the value, which from_key refuses."""
    script = ideal_script(scenario)
    for j, step in enumerate(scenario.expect):
        example = step.example or {}
        for arg, matcher in step.params.items():
            for spot in _key_spots(matcher, example.get(arg)):
                cut = _replaced(example[arg], spot, _first_words)
                where = ".".join(str(p) for p in [arg, *spot])
                changed = _with_args(script, j, example | {arg: cut})
                yield f"takes-part-of-the-value-of-{where}", changed, "wrong_params"


def match_mistakes(scenario: Scenario) -> list[Mistake]:
    """Every mistake above that applies to the scenario."""
    return [*number_form_mistakes(scenario), *key_part_mistakes(scenario)]
