"""Alternative routes: the first route a trial passes by counts, and is recorded."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from mcp_farm.scenarios.catalog import structural_problems
from mcp_farm.schema import (
    Scenario,
    Suite,
    ToolCallRecord,
)
from mcp_farm.workers.grading.grade import grade

SCHEMAS: dict[str, dict[str, Any]] = {
    name: {"type": "object", "properties": {"q": {}, "sql": {}, "id": {}, "text": {}}}
    for name in ("search", "add_note", "query", "lookup", "list")
}


def routed(*routes: dict[str, Any], **fields: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "id": "t",
            "version": 1,
            "tier": "moderate",
            "prompt": "p",
            "servers": ["s"],
            "routes": list(routes),
            **fields,
        }
    )


def call(i: int, tool: str, result: str = "", **arguments: Any) -> ToolCallRecord:
    return ToolCallRecord(
        index=i, server="s", tool=tool, arguments=arguments, ok=True, result_text=result
    )


# Search for an observation; if nothing is found say so, otherwise add a note about it.
SEARCH_OR_ADD = routed(
    {
        "name": "nothing-found",
        "expect": [{"tool": "search", "params": {"q": {"regex": ".*heron.*"}}}],
        "final_answer": "no (note|observation)s?|nothing",
    },
    {
        "name": "add-it",
        "expect": [
            {"tool": "search", "params": {"q": {"regex": ".*heron.*"}}},
            {"tool": "add_note", "params": {"text": {"regex": ".*heron.*"}}},
        ],
        "final_answer": "added",
    },
)

# One JOIN query, or two lookups, the second taking the first's id.
JOIN_OR_LOOKUPS = routed(
    {
        "name": "join",
        "expect": [{"tool": "query", "params": {"sql": {"regex": "(?s).*join.*"}}}],
    },
    {
        "name": "lookups",
        "expect": [
            {"tool": "lookup", "params": {"q": "Ada"}},
            {"tool": "lookup", "params": {"id": {"derived_from_step": 0, "from_key": "id"}}},
        ],
    },
    final_answer="42",
    calls="strict",
)


def verdict(s: Scenario, calls: list[ToolCallRecord], answer: str) -> tuple[str, str | None, str]:
    v = grade(s, calls, answer, "answer", SCHEMAS)
    return v.outcome, v.route, v.detail


def test_the_first_route_that_passes_counts_and_is_recorded() -> None:
    searched = call(0, "search", "[]", q="grey heron")
    assert verdict(SEARCH_OR_ADD, [searched], "There are no notes about herons.")[:2] == (
        "pass",
        "nothing-found",
    )
    added = [searched, call(1, "add_note", "ok", text="grey heron at the pond")]
    outcome, route, detail = verdict(SEARCH_OR_ADD, added, "I added a note.")
    assert (outcome, route) == ("pass", "add-it")
    assert detail == "route add-it"


def test_with_no_route_passed_the_outcome_is_the_route_that_got_furthest() -> None:
    # Searched and added, but answered as if nothing was found: the first route calls adding
    # a wrong tool; the second has every step and misses only the answer.
    added = [call(0, "search", "[]", q="heron"), call(1, "add_note", "ok", text="heron")]
    outcome, route, detail = verdict(SEARCH_OR_ADD, added, "Nothing found.")
    assert (outcome, route) == ("output_mismatch", "add-it")
    assert detail.startswith("route add-it: the answer does not mention")


def test_a_route_with_a_wrong_step_fails_on_that_step() -> None:
    added = [call(0, "search", "[]", q="heron"), call(1, "add_note", "ok", text="a crane")]
    outcome, route, detail = verdict(SEARCH_OR_ADD, added, "I added it.")
    assert (outcome, route) == ("wrong_params", "add-it")
    assert "add_note.text" in detail


def test_ties_go_to_the_first_route_listed() -> None:
    outcome, route, _ = verdict(SEARCH_OR_ADD, [call(0, "search", "[]", q="owl")], "Nothing.")
    assert (outcome, route) == ("wrong_params", "nothing-found")


def test_either_route_of_a_strict_scenario_passes_and_a_mix_fails() -> None:
    join = [call(0, "query", '{"total": 42}', sql="SELECT ... JOIN orders ...")]
    assert verdict(JOIN_OR_LOOKUPS, join, "42 orders")[:2] == ("pass", "join")
    lookups = [
        call(0, "lookup", '{"id": "c-7", "name": "Ada"}', q="Ada"),
        call(1, "lookup", '{"orders": 42}', id="c-7"),
    ]
    outcome, route, _ = verdict(JOIN_OR_LOOKUPS, lookups, "42 orders")
    assert (outcome, route) == ("pass", "lookups")
    # A value taken from the wrong key ("name", not "id") does not chain.
    wrong_key = [lookups[0], call(1, "lookup", '{"orders": 42}', id="Ada")]
    outcome, route, detail = verdict(JOIN_OR_LOOKUPS, wrong_key, "42 orders")
    assert (outcome, route) == ("wrong_params", "lookups")
    assert "lookup.id" in detail
    # Half of each route: the query is a wrong tool on the lookups route, the lookup on the
    # join route.
    mixed = [lookups[0], call(1, "query", '{"total": 42}', sql="SELECT 42")]
    outcome, route, _ = verdict(JOIN_OR_LOOKUPS, mixed, "42 orders")
    assert (outcome, route) == ("wrong_tool", "join")


def test_strict_counting_applies_inside_the_route_taken() -> None:
    # A failed-looking extra lookup before the right pair: strict makes it wrong_params.
    calls = [
        call(0, "lookup", "[]", q="ada"),
        call(1, "lookup", '{"id": "c-7", "name": "Ada"}', q="Ada"),
        call(2, "lookup", '{"orders": 42}', id="c-7"),
    ]
    outcome, route, detail = verdict(JOIN_OR_LOOKUPS, calls, "42")
    assert (outcome, route) == ("wrong_params", "lookups")
    assert "calls: strict" in detail


def test_first_try_comes_from_the_route_taken() -> None:
    join = [call(0, "query", "42", sql="select * from a join b")]
    assert grade(JOIN_OR_LOOKUPS, join, "42", "answer", SCHEMAS).first_try is True
    lenient = SEARCH_OR_ADD
    calls = [call(0, "search", "[]", q="owl"), call(1, "search", "[]", q="heron")]
    graded = grade(lenient, calls, "no notes", "answer", SCHEMAS)
    assert (graded.outcome, graded.route, graded.first_try) == ("pass", "nothing-found", False)


def test_listings_name_each_tool_once_and_accept_every_routes_tools() -> None:
    assert JOIN_OR_LOOKUPS.expected_tools == ["query", "lookup"]
    assert JOIN_OR_LOOKUPS.accepted_tools == {"query", "lookup"}
    assert [name for name, _ in JOIN_OR_LOOKUPS.ways()] == ["join", "lookups"]
    ways = dict(SEARCH_OR_ADD.ways())
    assert ways["add-it"].final_answer == "added"
    assert ways["add-it"].routes == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"routes": [{"name": "a", "expect": []}]}, "two or more routes"),
        (
            {
                "expect": [{"tool": "x"}],
                "routes": [{"name": "a"}, {"name": "b"}],
            },
            "not both",
        ),
        ({"routes": [{"name": "a"}, {"name": "a"}]}, "must differ"),
        ({"routes": [{"name": "A b"}, {"name": "c"}]}, "pattern"),
        ({"routes": [{"name": "a"}, {"name": "b", "final_answer": "(("}]}, "regular"),
    ],
)
def test_bad_routes_are_refused_at_load(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Scenario.model_validate(
            {"id": "t", "version": 1, "tier": "simple", "prompt": "p", "servers": ["s"]} | fields
        )


def test_a_chain_pointing_forward_inside_a_route_is_named_with_the_route() -> None:
    suite = Suite.model_validate(
        {
            "suite": "r",
            "servers": [{"name": "s", "command": ["x"]}],
            "scenarios": [
                {
                    "id": "t",
                    "version": 1,
                    "tier": "simple",
                    "prompt": "p",
                    "servers": ["s"],
                    "routes": [
                        {"name": "a", "expect": [{"tool": "x"}]},
                        {
                            "name": "b",
                            "expect": [{"tool": "x", "params": {"q": {"derived_from_step": 1}}}],
                        },
                    ],
                }
            ],
        }
    )
    problems = [str(p) for p in structural_problems(suite, "r.yaml")]
    assert any("scenarios[0].routes[1].expect[0].params.q.derived_from_step" in p for p in problems)
