"""Mistakes about what a value is: a number written in another JSON form, and a value picked
with `from_key` cut to a part of itself.

Each is the ideal script with one value changed. A whole number sent as a float passes where
the tool's schema types the parameter `number` and is wrong where it says `integer`; the
schema types are the servers' own, so PARAMETER_TYPES is checked by the self-checks against
what the real servers do with them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from mcp_farm.schema import (
    ParamMatcher,
    Scenario,
)
from tests.helpers import ideal_script
from tests.scenarios.mistakes import (
    Mistake,
    _replaced,
    _with_args,
)

# How the bundled servers' input schemas type the numbers bundled scenarios give with `exact`
# (tool, argument). A scenario that gives a new one fails to collect until it is listed here.
PARAMETER_TYPES: dict[tuple[str, str], Literal["number", "integer"]] = {
    ("read_text_file", "head"): "number",
    ("git_log", "max_count"): "integer",
}


def _is_whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def number_form_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """Each whole number an `exact` argument expects, sent as a float (`5.0` for `5`): a pass
    for a `number` parameter, wrong_params for an `integer` one."""
    script = ideal_script(scenario)
    for j, step in enumerate(scenario.expect):
        example, tool = step.example or {}, step.names[0]
        for arg, matcher in step.params_for(tool).items():
            if matcher.kind != "exact" or not _is_whole_number(example.get(arg)):
                continue
            typed = PARAMETER_TYPES.get((tool, arg))
            assert typed, f"{scenario.id}: list how {tool} types {arg!r} in PARAMETER_TYPES"
            changed = _with_args(script, j, example | {arg: float(example[arg])})
            outcome = "pass" if typed == "number" else "wrong_params"
            yield f"sends-{arg}-as-a-float-for-{typed}", changed, outcome


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
