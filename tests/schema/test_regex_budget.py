"""A scenario's or a server's regular expression is checked at load and matched within a time
budget: a pattern that backtracks without end is refused, or stopped, never left running."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_farm.schema import (
    MATCH_BUDGET_S,
    ParamMatcher,
    PatternTimeout,
    ServerDef,
    SpecError,
    budgeted_finditer,
    budgeted_fullmatch,
    budgeted_search,
)
from mcp_farm.schema.parse.regexes import regex_problem
from tests.schema.test_fuzz_loading import (
    _load_error,
    _suite_with,
)

NESTED = ["(a+)+", "(a*)*", r"(\w+\s?)*", "(?:x{2,})+y", "((a+)?b)*", "(?=(a+)+)", "(a+){2,}"]
"""A repeat inside a repeat, both unbounded: refused at load."""
SAFE = [
    "(a+){2}",
    "(?>a+)+",
    "(a++)+",
    "(a+)++",
    r"Total: (\d+)",
    r"(?s)(?=.*\bshop_orders\b)(?=.*\bcustomers\b).*ada lovelace.*",
    r".*TIMEOUT\s*=\s*30.*",
]
"""Bounded, possessive, atomic or not nested: accepted."""


@pytest.mark.parametrize("pattern", NESTED)
def test_a_repeat_inside_a_repeat_is_refused(pattern: str) -> None:
    problem = regex_problem(pattern)
    assert problem is not None and "repeated group holds an unbounded repeat" in problem


@pytest.mark.parametrize("pattern", SAFE)
def test_bounded_possessive_and_atomic_repeats_are_accepted(pattern: str) -> None:
    assert regex_problem(pattern) is None


def test_a_nested_repeat_in_final_answer_fails_the_load_naming_file_and_field(
    tmp_path: Path,
) -> None:
    path = _suite_with(tmp_path, final_answer="total: (\\d+,?)+ EUR")
    message = _load_error(path)
    assert message.startswith(f"{path}: scenarios[0].final_answer: a repeated group holds")


def test_a_nested_repeat_in_a_regex_matcher_fails_the_load_naming_the_field(
    tmp_path: Path,
) -> None:
    params = {"path": {"regex": "(/\\w+)*/?"}, "depth": {"optional": {"regex": "(\\d+)+"}}}
    path = _suite_with(tmp_path, expect=[{"tool": "list_directory", "params": params}])
    message = _load_error(path)
    assert message.startswith(f"{path}: scenarios[0].expect[0].params.depth.optional.regex: ")
    assert "repeated group" in message


@pytest.mark.parametrize(
    "spec",
    [
        {"derived_from_step": 0, "from_regex": "Ref: ((\\w+-?)+)"},
        {"json_schema": {"type": "string", "pattern": "^(a|b+)*$"}},
        {"json_schema": {"type": "object", "patternProperties": {"^(x+)+$": {}}}},
    ],
)
def test_a_nested_repeat_in_from_regex_or_a_schema_pattern_is_refused(spec: object) -> None:
    with pytest.raises(ValueError, match="repeated group holds an unbounded repeat"):
        ParamMatcher.model_validate(spec)


def test_a_schema_value_that_only_looks_like_a_pattern_is_data() -> None:
    ParamMatcher.model_validate({"json_schema": {"const": {"pattern": "(a+)+"}}})


def test_a_nested_repeat_in_a_servers_error_pattern_is_refused() -> None:
    with pytest.raises(ValueError, match=r"error_pattern\n.*repeated group holds"):
        ServerDef.model_validate(
            {"name": "db", "command": ["db"], "error_pattern": "^(Error: .+\\n?)+"}
        )


def test_a_catastrophic_match_stops_at_its_budget_naming_field_and_size() -> None:
    text = "a" * 4000 + "!"
    with pytest.raises(PatternTimeout) as caught:
        budgeted_search("(a|aa)+$", text, field="final_answer")
    assert str(caught.value) == (
        f"final_answer /(a|aa)+$/ ran past its {MATCH_BUDGET_S:g} s budget on 4,001 characters"
    )
    # Not a TimeoutError: the trial did not run out of time, so it is no `timeout` outcome.
    assert not isinstance(caught.value, TimeoutError)


@pytest.mark.parametrize(
    "call",
    [
        lambda: budgeted_fullmatch("(a|aa)+", "a" * 40 + "!", field="regex"),
        lambda: budgeted_finditer("(x|xx)+y", "x" * 40, field="from_regex"),
    ],
)
def test_full_matches_and_scans_are_budgeted_too(call: Callable[[], object]) -> None:
    with pytest.raises(PatternTimeout):
        call()


def test_a_long_pattern_is_quoted_cut() -> None:
    pattern = "(a|aa)+" + "b?" * 60 + "$"
    with pytest.raises(PatternTimeout) as caught:
        budgeted_search(pattern, "a" * 60 + "!", field="final_answer")
    quoted = str(caught.value).split("/")[1]
    assert len(quoted) == 80 and quoted.endswith("…")


@pytest.mark.parametrize("pattern", ["[[:alpha:]]", "[a-z--_]", "[a&&x]"])
def test_a_pattern_re_reads_otherwise_than_later_pythons_is_refused(pattern: str) -> None:
    # `regex` reads `[[:alpha:]]` as a letter, `re` as a set then `]`: neither is used.
    problem = regex_problem(pattern)
    assert problem is not None and problem.startswith("ambiguous regular expression: Possible")


def test_a_pattern_broken_after_loading_is_the_scenarios_spec_error() -> None:
    with pytest.raises(SpecError, match="scenario: regex: invalid regular expression"):
        budgeted_fullmatch("([a-z", "abc", field="regex")


@pytest.mark.parametrize(
    ("pattern", "flags", "text"),
    [
        ("budget", re.IGNORECASE, "The BUDGET is 120000"),
        ("(?P<code>[A-Z]+-\\d+)", 0, "see CHK-112 and OPS-7"),
        ("^Error:", re.MULTILINE, "ok\nError: no such table"),
        ("a.b", re.DOTALL, "a\nb"),
        ("a.b", 0, "a\nb"),
        ("(\\d*)", 0, "a1b22"),
        ("x*", 0, "axbxx"),
        ("\\bsend\\b", re.IGNORECASE, "Connection.send() and sender"),
        ("straße", re.IGNORECASE, "STRASSE strasse Straße"),
        ("(?s).*ada lovelace.*", re.IGNORECASE | re.DOTALL, "Customer\nAda Lovelace"),
    ],
)
def test_budgeted_matching_finds_what_re_finds(pattern: str, flags: int, text: str) -> None:
    expected = [(m.span(), m.groups(), m.groupdict()) for m in re.finditer(pattern, text, flags)]
    found = budgeted_finditer(pattern, text, field="f", flags=flags)
    assert [(m.span(), m.groups(), m.groupdict()) for m in found] == expected
    first = re.search(pattern, text, flags)
    got = budgeted_search(pattern, text, field="f", flags=flags)
    assert (got and got.span()) == (first and first.span())
