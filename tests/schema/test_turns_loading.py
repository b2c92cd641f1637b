"""A conversation's `turns:` load strictly: a wrong shape names file and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_farm.scenarios import load_suite
from mcp_farm.scenarios.validate import check_file
from mcp_farm.schema import SpecError

TWO_TURNS: list[dict[str, Any]] = [
    {"user": "Make a note.", "must_ask": ["title"], "example_answer": "What title?"},
    {
        "user": "Call it Plans.",
        "expect": [{"tool": "create_note", "params": {"title": "Plans"}}],
    },
]


def suite_file(tmp_path: Path, **fields: Any) -> Path:
    scenario = {"id": "t.one", "version": 1, "tier": "simple", "servers": ["notes"]} | fields
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"suite": "mine", "scenarios": [scenario]}), encoding="utf-8")
    return path


def test_a_conversation_loads_with_expect_none_read_as_no_call(tmp_path: Path) -> None:
    turns = [{"user": "Thanks!", "expect": "none"}, *TWO_TURNS]
    scenario = load_suite(str(suite_file(tmp_path, turns=turns))).scenarios[0]
    assert scenario.prompt is None
    assert scenario.turns[0].expect == []
    assert scenario.expected_tools == ["create_note"]
    assert scenario.turn_scenario(2).prompt == "Call it Plans."


@pytest.mark.parametrize(
    ("fields", "where", "problem"),
    [
        ({"prompt": "p", "turns": TWO_TURNS}, "scenarios[0]", "not both"),
        ({}, "scenarios[0]", "(a conversation): neither is here"),
        ({"turns": []}, "scenarios[0]", "`turns` is empty: give at least one turn"),
        (
            {"turns": [{"user": f"m{i}", "expect": "none"} for i in range(41)]},
            "scenarios[0]",
            "41 turns: a conversation holds at most 40 user messages",
        ),
        (
            {
                "user_sim": {
                    "opening": "o",
                    "reason": "r",
                    "satisfied_when": "s",
                    "max_turns": 41,
                }
            },
            "scenarios[0].user_sim.max_turns",
            "less than or equal to 40",
        ),
        ({"turns": TWO_TURNS, "final_answer": "x"}, "scenarios[0]", "in each turn"),
        (
            {"turns": [{"user": "u", "must_ask": ["x"], "expect": [{"tool": "t"}]}]},
            "scenarios[0].turns[0]",
            "must_ask",
        ),
        (
            {"turns": [{"user": "u", "must_ask": ["(["]}]},
            "scenarios[0].turns[0].must_ask",
            "invalid regular expression",
        ),
        (
            {
                "turns": [
                    {
                        "user": "u",
                        "expect": [
                            {"tool": "t", "params": {"a": {"derived_from_step": 0, "from_turn": 0}}}
                        ],
                    }
                ]
            },
            "scenarios[0]",
            "this is the first turn (0): a value of this turn's own steps is read with "
            "`derived_from_step` alone; leave `from_turn` out",
        ),
        (
            {
                "prompt": "p",
                "expect": [
                    {"tool": "t"},
                    {"tool": "t", "params": {"a": {"derived_from_step": 0, "from_turn": 0}}},
                ],
            },
            "scenarios[0]",
            "only a conversation has turns",
        ),
        (
            {"turns": TWO_TURNS, "on_turn_failure": "retry"},
            "scenarios[0].on_turn_failure",
            "stop",
        ),
        (
            {"turns": [TWO_TURNS[0], TWO_TURNS[1] | {"event": "tools_changed"}]},
            "scenarios[0].turns[1]",
            "`event: tools_changed` and `trigger:` go together",
        ),
        (
            {"turns": [TWO_TURNS[0], TWO_TURNS[1] | {"event": "tools_added"}]},
            "scenarios[0].turns[1].event",
            "tools_changed",
        ),
    ],
)
def test_a_wrong_conversation_names_its_field(
    tmp_path: Path, fields: dict[str, Any], where: str, problem: str
) -> None:
    with pytest.raises(SpecError) as caught:
        load_suite(str(suite_file(tmp_path, **fields)))
    assert where in str(caught.value)
    assert problem in str(caught.value)


def test_from_turn_goes_only_with_derived_from_step(tmp_path: Path) -> None:
    turns = [
        TWO_TURNS[1],
        {"user": "u", "expect": [{"tool": "t", "params": {"a": {"regex": "x", "from_turn": 0}}}]},
    ]
    with pytest.raises(SpecError, match="from_turn` only goes with `derived_from_step") as caught:
        load_suite(str(suite_file(tmp_path, turns=turns)))
    # Issue 36, item 23: the message says what to write.
    assert "{derived_from_step: 0, from_turn: 0, from_key: id}" in str(caught.value)


def test_a_later_turn_naming_itself_is_told_to_leave_from_turn_out(tmp_path: Path) -> None:
    later = {
        "user": "u",
        "expect": [{"tool": "t", "params": {"a": {"derived_from_step": 0, "from_turn": 1}}}],
    }
    with pytest.raises(SpecError) as caught:
        load_suite(str(suite_file(tmp_path, turns=[TWO_TURNS[0], later])))
    assert "must name an earlier turn (0..0), got 1; for a step of this turn, leave" in str(
        caught.value
    )


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "true"])
def test_an_unquoted_yes_as_a_users_message_is_told_to_quote_it(tmp_path: Path, word: str) -> None:
    path = tmp_path / "yes.yaml"
    path.write_text(
        "suite: words\nscenarios:\n  - id: c\n    version: 1\n    tier: simple\n"
        f"    servers: [notes]\n    turns:\n      - user: {word}\n",
        encoding="utf-8",
    )
    with pytest.raises(SpecError) as caught:
        load_suite(str(path))
    assert "scenarios[0].turns[0].user" in str(caught.value)
    quoted = "yes" if word in ("yes", "on", "true") else "no"
    assert f'as a boolean; quote the text, as in user: "{quoted}"' in str(caught.value)


def test_a_suite_path_not_found_says_it_is_read_from_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as caught:
        load_suite("suites/mine.yaml")
    assert f"read from the working folder ({tmp_path})" in str(caught.value)
    assert "not from the sweep file's folder" in str(caught.value)


def test_validate_wants_a_must_ask_example_that_asks_and_answers_that_match(
    tmp_path: Path,
) -> None:
    turns = [
        {"user": "Make a note.", "must_ask": ["title"], "example_answer": "Done."},
        TWO_TURNS[1] | {"final_answer": "plans", "example_answer": "Created it."},
    ]
    _suite, problems = check_file(suite_file(tmp_path, turns=turns))
    fields = [p.field for p in problems]
    assert "scenarios[0].turns[0].example_answer" in fields
    assert "scenarios[0].turns[1].example_answer" in fields
