"""Ignore rules: JSON paths and regexes replace what they name by `<ignored>`, strictly parsed."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mcp_farm.schema import IGNORED, IgnoreRules


def test_paths_reach_keys_indexes_every_item_and_any_depth() -> None:
    value = {"a": 1, "b": {"id": 2, "c": [{"id": 3}, {"id": 4, "k": 5}]}, "items": [1, 2]}
    rules = IgnoreRules(paths=["$.a", "$..id", "$.b.c[1].k", "$['items'][*]"])
    assert rules.applied(value) == {
        "a": IGNORED,
        "b": {"id": IGNORED, "c": [{"id": IGNORED}, {"id": IGNORED, "k": IGNORED}]},
        "items": [IGNORED, IGNORED],
    }
    assert value["a"] == 1  # a copy, the value as it was


def test_a_path_that_reaches_nothing_leaves_the_value_alone_and_absence_still_shows() -> None:
    rules = IgnoreRules(paths=["$.at"])
    assert rules.applied({"x": 1}) == {"x": 1}
    assert rules.applied({"at": 1}) != rules.applied({"x": 1})


def test_patterns_apply_to_strings_in_json_and_to_plain_text() -> None:
    rules = IgnoreRules(patterns=[r"\d{4}-\d\d-\d\dT[\d:]+Z"])
    assert rules.applied({"note": "at 2026-11-25T10:00:00Z", "2026-01-01T00:00:00Z": 1}) == {
        "note": f"at {IGNORED}",
        "2026-01-01T00:00:00Z": 1,
    }
    assert rules.text_lines("done at 2026-11-25T10:00:00Z\nok") == [f"done at {IGNORED}", "ok"]
    assert rules.text_lines('{"b": 1, "a": "2026-11-25T10:00:00Z"}') == [
        "{",
        f'  "a": "{IGNORED}",',
        '  "b": 1',
        "}",
    ]


@pytest.mark.parametrize(
    ("rules", "where"),
    [
        ({"paths": ["at"]}, "paths.0"),
        ({"paths": ["$"]}, "paths.0"),
        ({"paths": ["$.a", "$.a..[0]"]}, "paths.1"),
        ({"patterns": ["("]}, "patterns.0"),
        ({"pattern": ["x"]}, "pattern"),
    ],
)
def test_a_rule_that_does_not_parse_is_refused_naming_it(
    rules: dict[str, object], where: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        IgnoreRules.model_validate(rules)
    assert where in str(caught.value)
