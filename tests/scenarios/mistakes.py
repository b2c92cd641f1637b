"""Mistakes a scripted agent makes, read off a scenario's own expectations.

Each is the ideal script with one thing changed and the outcome that change deserves. The
self-checks run them through the real servers, so every matcher form is shown to catch what it
is there to catch (and to let through what it allows).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from typing import Any

from mcp_farm.schema import (
    ExpectedCall,
    ParamMatcher,
    Scenario,
)
from mcp_farm.workers.grading.matchers import (
    absent_problem,
    check,
)
from tests.helpers import ideal_script
from tests.scenarios.mistakes_strict import blame_mistakes

Script = list[dict[str, Any]]
Mistake = tuple[str, Script, str]

# Calls an agent may make instead of a step's first tool, and should pass with, that the
# scenario cannot say itself: an alternative judged by the step's shared params whose tool needs
# other arguments than the first tool's example. Per scenario: (route, or None without routes;
# step; tool; arguments). An alternative with params of its own carries its `example` in the
# scenario; one sharing the params is otherwise called with the step's example.
Alternate = tuple[str | None, int, str, dict[str, Any]]
ALTERNATE_CALLS: dict[str, list[Alternate]] = {
    "mail.marco-and-priya": [(None, 0, "search_email", {"query": "Marco"})],
}


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"call": {"name": name, "arguments": arguments}}


def _with_args(script: Script, j: int, arguments: dict[str, Any]) -> Script:
    changed = copy.deepcopy(script)
    changed[j]["call"]["arguments"] = arguments
    return changed


def _requires_all(scenario: Scenario, j: int) -> set[int]:
    """Every step that step j comes after, directly or through others (chained values too)."""
    found: set[int] = set()
    todo = [j]
    while todo:
        index = todo.pop()
        step = scenario.expect[index]
        for k in {*step.requires(index, scenario.order), *step.sources()} - found:
            found.add(k)
            todo.append(k)
    return found


def order_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """Steps free of each other swapped (a pass), and a step moved before one it must follow."""
    script = ideal_script(scenario)
    n = len(scenario.expect)
    for i in range(n - 1):
        if i not in _requires_all(scenario, i + 1):
            swapped = [*script[:i], script[i + 1], script[i], *script[i + 2 :]]
            yield "runs-independent-steps-the-other-way", swapped, "pass"
            break
    for j, step in enumerate(scenario.expect):
        if step.after:
            first = min(step.after)
            moved = [*script[:first], script[j], *script[first:j], *script[j + 1 :]]
            yield "puts-a-step-before-one-it-follows", moved, "wrong_sequence"
            break


def _wrong(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return -abs(value) - 1
    if isinstance(value, str):
        return value + "-zz9"
    return {"zz": value}


def optional_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """Optional arguments left out (a pass), and one given a value its matcher refuses."""
    script = ideal_script(scenario)
    for j, step in enumerate(scenario.expect):
        example = step.example or {}
        optional = {a: m for a, m in step.params.items() if m.kind == "optional" and a in example}
        if not optional:
            continue
        kept = {a: v for a, v in example.items() if a not in optional}
        yield "leaves-out-optional-arguments", _with_args(script, j, kept), "pass"
        for arg, matcher in optional.items():
            wrong = _wrong(example[arg])
            if check(matcher, wrong) is not None:
                changed = example | {arg: wrong}
                yield (
                    "gets-an-optional-argument-wrong",
                    _with_args(script, j, changed),
                    "wrong_params",
                )
                break
        return


def _derived_spots(matcher: ParamMatcher, value: Any) -> Iterator[list[int | str]]:
    """Paths (inside the example value) of values a derived matcher judges."""
    if matcher.optional is not None:
        yield from _derived_spots(matcher.optional, value)
    elif matcher.derived_from_step is not None:
        yield []
    elif matcher.keys is not None and isinstance(value, dict):
        for key, each in matcher.keys.items():
            if key in value:
                yield from ([key, *p] for p in _derived_spots(each, value[key]))
    elif isinstance(value, list) and value:
        if isinstance(matcher.items, list):
            for i, (each, item) in enumerate(zip(matcher.items, value, strict=False)):
                yield from ([i, *p] for p in _derived_spots(each, item))
        elif matcher.items is not None:
            yield from ([0, *p] for p in _derived_spots(matcher.items, value[0]))
        contains = matcher.contains
        wanted = [contains] if isinstance(contains, ParamMatcher) else contains or []
        if any(m.derived_from_step is not None for m in wanted):
            # Some item must come from the result: change them all, or another still does.
            for i in range(len(value)):
                yield [i]


def _replaced(value: Any, path: list[int | str], change: Any) -> Any:
    changed = copy.deepcopy(value)
    if not path:
        return change(changed)
    holder = changed
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = change(holder[path[-1]])
    return changed


def chain_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """A chained value made up (in each step that has one), or cut short (no longer whole)."""
    script = ideal_script(scenario)
    cut_done = False
    for j, step in enumerate(scenario.expect):
        example = step.example or {}
        for arg, matcher in step.params.items():
            spots = list(_derived_spots(matcher, example.get(arg)))
            if not spots:
                continue
            garbled = example[arg]
            for spot in spots:
                garbled = _replaced(garbled, spot, _garble)
            changed = _with_args(script, j, example | {arg: garbled})
            yield f"makes-up-a-chained-value-in-step-{j}", changed, "wrong_params"
            cut = _replaced(example[arg], spots[0], _cut)
            if not cut_done and cut != example[arg]:
                cut_done = True
                changed = _with_args(script, j, example | {arg: cut})
                yield "cuts-a-chained-value-short", changed, "wrong_params"
            break


def _garble(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value * 1000 + 7
    return f"{value}zz9"


def _cut(value: Any) -> Any:
    return value[:-1] if isinstance(value, str) and len(value) > 2 else value


def shape_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """Arrays and objects with an item missing, an item too many, or a key not allowed."""
    script = ideal_script(scenario)
    for j, step in enumerate(scenario.expect):
        example = step.example or {}
        for arg, matcher in step.params.items():
            value = example.get(arg)
            for name, changed in _shape_changes(matcher, value):
                yield name, _with_args(script, j, example | {arg: changed}), "wrong_params"


def _shape_changes(matcher: ParamMatcher, value: Any) -> Iterator[tuple[str, Any]]:
    if matcher.contains is not None and isinstance(value, list):
        yield "leaves-out-a-required-item", []
    if isinstance(matcher.items, list) and isinstance(value, list) and value:
        yield "adds-an-item", [*value, copy.deepcopy(value[-1])]
    inner = matcher.items[0] if isinstance(matcher.items, list) else matcher.items
    strict_items = inner is not None and inner.keys is not None and inner.extra_keys == "forbid"
    if strict_items and isinstance(value, list) and value and isinstance(value[0], dict):
        yield "adds-a-key-inside-an-item", [value[0] | {"zz": 1}, *value[1:]]
    if matcher.keys is not None and matcher.extra_keys == "forbid" and isinstance(value, dict):
        yield "adds-a-key", value | {"zz": 1}


def _refuses(step: ExpectedCall, tool: str, arguments: dict[str, Any]) -> bool:
    """Whether the alternative `tool`'s own params refuse `arguments` (one missing, or one
    given a value its matcher refuses); chained values are not judged here."""
    own = step.params_for(tool)
    for arg, matcher in own.items():
        if matcher.sources():
            continue
        if arg not in arguments:
            if absent_problem(matcher) is not None:
                return True
        elif check(matcher, arguments[arg]) is not None:
            return True
    return False


def alternate_calls(scenario: Scenario) -> list[Alternate]:
    """Each alternative of each step (on every route) and the arguments an ideal agent calls
    it with: listed in ALTERNATE_CALLS, else its own `example`, else, sharing the step's
    params, the step's example. An alternative with params of its own and no example is left
    out (`farm scenarios validate` names it)."""
    listed = ALTERNATE_CALLS.get(scenario.id, [])
    found = list(listed)
    for route, way in scenario.ways():
        for j, step in enumerate(way.expect):
            options = () if isinstance(step.tool, str) else step.tool.one_of[1:]
            for option in options:
                name = option if isinstance(option, str) else option.name
                if any((r, k, t) == (route, j, name) for r, k, t, _a in listed):
                    continue
                example = step.example if isinstance(option, str) else option.example
                if example is not None:
                    found.append((route, j, name, example))
    return found


def alternate_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """Each alternative of a step called instead of its first tool (a pass, on the route it
    belongs to); and, for an alternative with params of its own, that tool called with the
    first tool's arguments where its own params refuse them (wrong_params)."""
    ways = dict(scenario.ways())
    for route, j, tool, arguments in alternate_calls(scenario):
        way = ways[route]
        step: ExpectedCall = way.expect[j]
        assert tool in step.names[1:], f"{scenario.id}: {tool} is not an alternative of step {j}"
        at = "" if route is None else f"@{route}"
        script = ideal_script(way)
        first = script[j]["call"]["arguments"]
        script[j] = _call(tool, arguments)
        yield f"uses-{tool}-instead{at}", script, "pass"
        if _refuses(step, tool, first):
            mixed = copy.deepcopy(script)
            mixed[j] = _call(tool, first)
            yield f"calls-{tool}-with-the-first-tools-arguments{at}", mixed, "wrong_params"


def strict_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """Under `calls: strict`, a wrong call of the first step's tool (its first argument
    changed) before the right calls, and one after them: each wrong_params, where lenient
    counting would let both pass. On a scenario with routes, they are made on each route."""
    if scenario.calls != "strict" or scenario.routes or not scenario.expect:
        return
    script = ideal_script(scenario)
    call = script[0]["call"]
    if not call["arguments"]:
        return
    name = next(iter(call["arguments"]))
    wrong = _call(call["name"], call["arguments"] | {name: _wrong(call["arguments"][name])})
    yield "makes-a-wrong-call-before-the-right-ones", [wrong, *script], "wrong_params"
    yield (
        "makes-a-wrong-call-after-the-right-ones",
        [*script[:-1], wrong, script[-1]],
        "wrong_params",
    )


# Per scenario with routes: a wrong route (steps of two routes mixed, or one left half done),
# and the outcome it deserves. Every bundled scenario with routes needs one.
ROUTE_MISTAKES: dict[str, list[tuple[str, Script, str]]] = {
    "ref.fs.version-consistency": [
        # Half of each route: one file through read_multiple_files, the other read alone.
        (
            "mixes-two-routes",
            [
                _call("read_multiple_files", {"paths": ["webapp/package.json"]}),
                _call("read_text_file", {"path": "webapp/CHANGELOG.md"}),
                {"answer": "Yes: both say 2.4.1."},
            ],
            "wrong_tool",
        ),
        # The one-call route with one of its two files left out.
        (
            "reads-one-file-of-two-in-one-call",
            [
                _call("read_multiple_files", {"paths": ["webapp/package.json"]}),
                {"answer": "package.json says 2.4.1."},
            ],
            "wrong_params",
        ),
    ],
    "ref.memory.tea": [
        # The look-up route, about the wrong person.
        (
            "looks-up-the-wrong-person",
            [
                _call("search_nodes", {"query": "Charles Babbage"}),
                _call(
                    "add_observations",
                    {"observations": [{"entityName": "Ada Lovelace", "contents": ["Drinks tea"]}]},
                ),
                {"answer": "Noted: Ada drinks tea now."},
            ],
            "wrong_params",
        ),
        # The observation added to someone the memory does not hold: the server refuses it.
        (
            "adds-to-a-person-not-in-memory",
            [
                _call(
                    "add_observations",
                    {"observations": [{"entityName": "Ada", "contents": ["Drinks tea"]}]},
                ),
                {"answer": "Noted: Ada drinks tea now."},
            ],
            "wrong_params",
        ),
    ],
}


ADA_ID = _call("read_query", {"query": "SELECT id FROM customers WHERE name = 'Ada Lovelace'"})
ROUTE_MISTAKES["ref.sql.ada-orders"] = [
    # The lookup route stopped half way: the id found, the orders never counted.
    ("looks-up-the-id-and-stops", [ADA_ID, {"answer": "She has 3 orders."}], "wrong_sequence"),
    # The one-query route done, with the other route's first query before it: lenient calls
    # would let it pass; the scenario's `calls: strict` does not.
    (
        "adds-a-stray-query-under-strict",
        [
            ADA_ID,
            _call(
                "read_query",
                {
                    "query": "SELECT COUNT(*) FROM shop_orders o JOIN customers c "
                    "ON c.id = o.customer_id WHERE c.name = 'Ada Lovelace'"
                },
            ),
            {"answer": "She has 3 orders."},
        ],
        "wrong_params",
    ),
]

# Per scenario: a mistake only that scenario's server or matchers can show, and its outcome.
SCENARIO_MISTAKES: dict[str, list[Mistake]] = {
    # A read that works, of a file no step asks for, after the right read: strict calls fail it.
    "ref.fs.readme-version": [
        (
            "reads-another-file-after-the-readme",
            [
                _call("read_text_file", {"path": "webapp/README.md"}),
                _call("read_text_file", {"path": "webapp/package.json"}),
                {"answer": "The README says the current version is 2.4.1."},
            ],
            "wrong_params",
        )
    ],
    # The colleague taken from the relation's `from` (Ada herself), not its `to`: a whole
    # value of the look-up's result, which only `from_key: to` refuses.
    "ref.memory.colleague-dinner": [
        (
            "takes-the-name-from-the-wrong-key",
            [
                _call("open_nodes", {"names": ["Ada Lovelace"]}),
                _call(
                    "add_observations",
                    {
                        "observations": [
                            {
                                "entityName": "Ada Lovelace",
                                "contents": ["Invited to Friday's dinner"],
                            }
                        ]
                    },
                ),
                {"answer": "Noted: Charles Babbage is invited to Friday's dinner."},
            ],
            "wrong_params",
        )
    ],
    # Another id of the same listing: a whole value of it, but not the plumber's line.
    "todo.plumber-done": [
        (
            "ticks-off-another-listed-reminder",
            [
                _call("list_reminders", {}),
                _call("complete_reminder", {"reminder_id": "r1"}),
                {"answer": "Done: the plumber reminder is ticked off."},
            ],
            "wrong_params",
        )
    ],
    # The server answers "Database error: no such column: town" as ordinary text; its
    # error_pattern makes that a failed call, which does not do the step.
    "ref.sql.lyon-customers": [
        (
            "queries-a-column-that-does-not-exist",
            [
                _call(
                    "read_query", {"query": "SELECT COUNT(*) FROM customers WHERE town = 'Lyon'"}
                ),
                {"answer": "Two of your customers live in Lyon."},
            ],
            "wrong_params",
        )
    ],
    # Another table of the listing described: the chained name is the one holding "order".
    "ref.sql.order-columns": [
        (
            "describes-another-listed-table",
            [
                _call("list_tables", {}),
                _call("describe_table", {"table_name": "customers"}),
                {"answer": "It has customer_id."},
            ],
            "wrong_params",
        )
    ],
}


def scenario_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """The scenario's own mistakes (SCENARIO_MISTAKES)."""
    yield from SCENARIO_MISTAKES.get(scenario.id, [])


def mixed_route_mistakes(scenario: Scenario) -> Iterator[Mistake]:
    """Two routes mixed: one route's first call, then another's later calls (or the first
    route without its last call, then the other's one call). When the mix calls, for every
    route, a tool that route neither expects nor allows, every route refuses it: wrong_tool,
    whatever the calls return. The first pair of routes that gives such a mix."""
    ways = scenario.ways()
    calls = {name: ideal_script(way)[:-1] for name, way in ways}
    for (first, _w), (second, way) in itertools.permutations(ways, 2):
        one, other = calls[first], calls[second]
        if len(other) >= 2:
            mixed = [*one[:1], *other[1:]]
        elif len(one) >= 2:
            mixed = [*one[:-1], *other]
        else:
            continue
        tools = {c["call"]["name"] for c in mixed}
        if all(tools - w.accepted_tools - set(w.allowed_extra) for _n, w in ways):
            answer = {"answer": way.example_answer or "done"}
            yield f"mixes-routes-{first}-and-{second}", [*mixed, answer], "wrong_tool"
            return


def route_mistakes(scenario: Scenario) -> list[Mistake]:
    """Wrong routes of a scenario with routes: two routes mixed, read off the scenario, and
    the scenario's own (ROUTE_MISTAKES, for bundled scenarios whose routes share tools)."""
    return [*mixed_route_mistakes(scenario), *ROUTE_MISTAKES.get(scenario.id, [])]


def form_mistakes(scenario: Scenario) -> list[Mistake]:
    """Every mistake above that applies to the scenario."""
    return [
        *order_mistakes(scenario),
        *optional_mistakes(scenario),
        *chain_mistakes(scenario),
        *shape_mistakes(scenario),
        *strict_mistakes(scenario),
        *scenario_mistakes(scenario),
        *blame_mistakes(scenario),
    ]
