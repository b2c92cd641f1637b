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
    TrialResult,
)
from mcp_farm.workers.grading.matchers import check
from mcp_farm.workers.grading.normal import same_json
from mcp_farm.workers.mcp.connections import connect
from mcp_farm.workers.node.runtime import Runtime
from mcp_farm.workers.trial import attached
from tests.helpers import ideal_script, trial

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
    """The first step's call made twice in a row, where no other step takes its tool: a loop,
    unless the repeat changes nothing (its tool marked read-only by its server, or the step
    `idempotent`), which the test that runs it decides from the listed tools."""
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


def order_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """Two neighbouring steps called the other way round: passing where the later one does
    not follow the earlier (a partial order lets them come in either order, under any
    counting), a wrong_sequence where it follows it by an `after:` that names it (its call
    made first still works: the order, not the call, is wrong). Steps whose calls are the
    same are left alone: swapped, the script is unchanged."""
    steps = scenario.expect
    script = ideal_script(scenario)
    free = dependent = False
    for j in range(len(steps) - 1):
        if script[j] == script[j + 1]:
            continue
        swapped = [*script[:j], script[j + 1], script[j], *script[j + 2 :]]
        follows = j in steps[j + 1].requires(j + 1, scenario.order)
        if not follows and not free:
            free = True
            yield "swaps-two-independent-steps", swapped, "pass"
        elif follows and steps[j + 1].after is not None and not dependent:
            dependent = True
            yield "swaps-a-step-and-the-step-it-follows", swapped, "wrong_sequence"


def blame_mistakes(scenario: Scenario) -> list[Mistake]:
    """Every mistake above, strict ones where the scenario counts calls strictly."""
    return [
        *strict_counting_mistakes(scenario),
        *leave_out_mistakes(scenario),
        *early_mistakes(scenario),
        *order_mistakes(scenario),
    ]


def deserved(
    runtime: Runtime,
    suite: str,
    scenario: Scenario,
    name: str,
    script: list[dict[str, Any]],
    outcome: str,
    result: TrialResult,
) -> str:
    """The outcome a repeat mistake deserves: a pass where the repeat changes nothing and its
    calls came back as the step wants (worked, or failed for a step with `expect_error`: a
    read said another way that the server refuses is a wrong call, not a repeat); the
    mistake's own outcome otherwise. Decided from the tools the scenario's servers list."""
    again = _repeated_tool(name, script)
    if again is None or not _harmless_repeat(runtime, suite, scenario, script, again):
        return outcome
    ok = not any(again in step.names and step.expect_error for step in scenario.all_steps)
    made = [c for c in result.tool_calls if c.tool == again]
    return "pass" if made and all(c.ok == ok for c in made) else outcome


def _repeated_tool(name: str, script: list[dict[str, Any]]) -> str | None:
    """The tool a repeat mistake calls again: the first call made twice, or the last step's
    done again another way (the call just before the answer)."""
    if name.startswith("repeats-a-step"):
        return str(script[0]["call"]["name"])
    if name.startswith("does-the-last-step-again"):
        return str(script[-2]["call"]["name"])
    return None


def _harmless_repeat(
    runtime: Runtime, suite: str, scenario: Scenario, script: list[dict[str, Any]], tool: str
) -> bool:
    """Whether calling `tool` again changes nothing: the server marks it read-only as a trial
    lists it, or a step that takes it is `idempotent`."""
    if any(tool in step.names and step.idempotent for step in scenario.all_steps):
        return True
    spec = trial(scenario, script, suite=suite)

    async def listed() -> bool:
        async with connect(attached(spec, scenario), runtime.pool, spec.prompt.tool_naming) as conn:
            return any(t.shown_name == tool and t.read_only for t in conn.tools.values())

    return runtime.portal.call(listed)
