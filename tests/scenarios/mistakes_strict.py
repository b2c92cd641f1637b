"""Mistakes about how calls are counted and which step takes the blame, read off a scenario.

Under `calls: strict` each step is done by one call: a second call that also fits a step done
is wrong_params, and an exact repeat of a step that is not the last a tool_loop (the session
stops the trial there). Whatever the counting: a step left out whose tool another step also
uses is a missing step (wrong_sequence), not a wrong argument of the call that did the other
step; and a chained step called before the step its value comes from is a wrong_sequence.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from mcp_farm.schema import (
    ParamMatcher,
    Scenario,
)
from mcp_farm.workers.grading.matchers import check
from mcp_farm.workers.grading.normal import same_json
from tests.helpers import ideal_script

Script = list[dict[str, Any]]
Mistake = tuple[str, Script, str]


def _variants(matcher: ParamMatcher, value: Any) -> Iterator[Any]:
    """Other values this matcher takes as well as the example's, in forms a server reads as
    the same request (another listed option, the same path spelled with `./`, the same text
    in other case or with a trailing space)."""
    if matcher.one_of is not None:
        yield from (o for o in matcher.one_of if not same_json(o, value))
    if not isinstance(value, str):
        return
    if matcher.kind == "path":
        head, slash, tail = value.rpartition("/")
        yield f"{head}/./{tail}" if slash else f"./{value}"
    yield f"{value} "
    yield value.swapcase()


def _refit(scenario: Scenario, j: int) -> dict[str, Any] | None:
    """Arguments other than the example's that step j's matchers (chained ones aside) accept
    just as well: an optional argument left out, or one argument said another way."""
    step = scenario.expect[j]
    example = step.example or {}
    params = step.params_for(step.names[0])
    for arg, matcher in params.items():
        if matcher.kind == "optional" and arg in example:
            return {a: v for a, v in example.items() if a != arg}
    for arg, matcher in params.items():
        if arg not in example or matcher.sources() or matcher.kind in ("any", "optional"):
            continue
        for other in _variants(matcher, example[arg]):
            if other != example[arg] and check(matcher, other) is None:
                return example | {arg: other}
    return None


def refit_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """The last step done, then done again by a different call that fits it as well."""
    if scenario.calls != "strict" or not scenario.expect:
        return
    script = ideal_script(scenario)
    j = len(scenario.expect) - 1
    arguments = _refit(scenario, j)
    if arguments is None:
        return
    again = copy.deepcopy(script[j])
    again["call"]["arguments"] = arguments
    yield "does-the-last-step-again-another-way", [*script[:-1], again, script[-1]], "wrong_params"


def repeat_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """The first step's call made twice in a row, where no other step takes its tool."""
    steps = scenario.expect
    if scenario.calls != "strict" or len(steps) < 2:
        return
    if any(steps[0].names[0] in step.names for step in steps[1:]):
        return
    script = ideal_script(scenario)
    yield "repeats-a-step-that-is-not-the-last", [script[0], *script], "tool_loop"


def strict_counting_mistakes(scenario: Scenario) -> list[Mistake]:
    """The mistakes `calls: strict` refuses where lenient counting lets them pass."""
    return [*refit_mistakes(scenario), *repeat_mistakes(scenario)]


def leave_out_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """The last step whose first tool an earlier step also uses, left out."""
    names = [step.names[0] for step in scenario.expect]
    later = [j for j, name in enumerate(names) if name in names[:j]]
    if later:
        script = ideal_script(scenario)
        j = later[-1]
        yield (
            "leaves-out-a-later-step-of-the-same-tool",
            script[:j] + script[j + 1 :],
            "wrong_sequence",
        )


def early_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """The first chained step called just before the step its value comes from."""
    for j, step in enumerate(scenario.expect):
        sources = step.sources()
        if sources:
            k = min(sources)
            script = ideal_script(scenario)
            moved = [*script[:k], script[j], *script[k:j], *script[j + 1 :]]
            yield "calls-a-chained-step-before-its-source", moved, "wrong_sequence"
            return


def blame_mistakes(scenario: Scenario) -> list[Mistake]:
    """Every mistake above, strict ones where the scenario counts calls strictly."""
    return [
        *strict_counting_mistakes(scenario),
        *leave_out_mistakes(scenario),
        *early_mistakes(scenario),
    ]
