"""A simulated user's card (`user_sim:`), `final_state:` and milestones load strictly: a wrong
shape names file and field; the guideline ships as a package file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_farm.scenarios import load_suite
from mcp_farm.scenarios.usersim import GUIDELINE_VERSION, guideline, user_system_prompt
from mcp_farm.schema import STOP_MARKER, SpecError, UserSimRecord

CARD: dict[str, Any] = {
    "opening": "Please add milk to my shopping note.",
    "reason": "You keep a shopping list in your notes.",
    "known": {"item": "milk", "note title": "Groceries"},
    "on_request": {"quantity": 2},
    "unknown": ["the note's id"],
    "satisfied_when": "the assistant says milk was added",
}


def suite_file(tmp_path: Path, **fields: Any) -> Path:
    scenario = {"id": "u.one", "version": 1, "tier": "simple", "servers": ["notes"]} | fields
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"suite": "mine", "scenarios": [scenario]}), encoding="utf-8")
    return path


def test_a_card_loads_and_its_opening_is_the_first_message(tmp_path: Path) -> None:
    fields = {
        "user_sim": CARD,
        "expect": [{"tool": "append_to_note", "params": {"text": {"regex": ".*milk.*"}}}],
        "final_state": [{"tool": "read_note", "arguments": {"note_id": "g"}, "matches": "milk"}],
        "must_ask": ["how many|quantity"],
    }
    scenario = load_suite(str(suite_file(tmp_path, **fields))).scenarios[0]
    assert scenario.user_sim is not None
    assert scenario.prompt_for(0) == CARD["opening"]
    assert scenario.wordings == 1
    assert scenario.user_sim.values() == ["milk", "Groceries", "2"]
    assert scenario.final_state[0].label == "read_note(note_id='g')"


@pytest.mark.parametrize(
    ("fields", "where", "problem"),
    [
        ({"user_sim": CARD, "prompt": "p"}, "scenarios[0]", "instead of `prompt`"),
        ({"user_sim": CARD, "paraphrases": ["x"]}, "scenarios[0]", "cannot have `paraphrases`"),
        ({"prompt": "p", "must_ask": ["x"]}, "scenarios[0]", "give `user_sim`"),
        ({"user_sim": CARD | {"colour": "red"}}, "scenarios[0].user_sim.colour", "Extra inputs"),
        (
            {"user_sim": CARD | {"known": {"quantity": 1}}},
            "scenarios[0].user_sim",
            "both `known` and `on_request`",
        ),
        (
            {"user_sim": CARD, "final_state": [{"tool": "read_note"}]},
            "scenarios[0].final_state[0]",
            "exactly one of `matches` and `lacks`",
        ),
        (
            {"user_sim": CARD | {"frozen": ["Two, please. ###STOP###"]}},
            "scenarios[0].user_sim",
            "a frozen message is empty or holds the stop marker",
        ),
        (
            {"user_sim": CARD, "must_ask": ["(["]},
            "scenarios[0].must_ask",
            "invalid regular expression",
        ),
    ],
)
def test_a_wrong_card_is_a_load_error_naming_the_field(
    tmp_path: Path, fields: dict[str, Any], where: str, problem: str
) -> None:
    with pytest.raises(SpecError) as caught:
        load_suite(str(suite_file(tmp_path, **fields)))
    assert where in str(caught.value)
    assert problem in str(caught.value)


def test_the_user_is_told_the_guideline_its_card_and_the_stop_marker() -> None:
    from mcp_farm.schema import UserCard

    told = user_system_prompt(UserCard.model_validate(CARD))
    assert GUIDELINE_VERSION == "v1"
    assert told.startswith(guideline())
    assert "- quantity: 2" in told
    assert "- the note's id" in told
    assert STOP_MARKER in guideline()
    assert "Never invent a fact" in guideline()


def test_a_stored_user_error_without_a_kind_loads_as_an_invented_fact() -> None:
    stored = (
        '{"identity": {"model_id": "u", "model_key": "k", "temperature": 0, "seed": 0,'
        ' "guideline": "v1"}, "errors": [{"message": 1, "facts": ["16:00"], "said": "x"}]}'
    )
    [error] = UserSimRecord.model_validate_json(stored).errors
    assert (error.kind, error.facts) == ("invented", ["16:00"])
