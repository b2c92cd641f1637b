"""A user model that does not play the user is noticed: a message that echoes its
instructions, answers no question the agent asked for a card fact, or is empty is a user error
of its own kind (`off_script`); and the calibration refuses such a model before a sweep, with
one line saying so. The scripted adapter plays both a good and a failing user model."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_farm.scenarios import find_scenario
from mcp_farm.scenarios.usersim import user_system_prompt
from mcp_farm.schema import Settings, UserError, UserModel
from mcp_farm.schema.tasks.messages import UserCalibrationRequest
from mcp_farm.workers.usersim.calibrate import CARD, calibrate_user
from mcp_farm.workers.usersim.script import off_script
from tests.helpers import scripted

DENTIST = find_scenario("usersim", "usersim.dentist-ask-time")
ASKED = "Sure. What start time should I use for the appointment?"


def judged(message: str, reply: str = ASKED) -> list[str]:
    card = DENTIST.user_sim
    assert card is not None
    return off_script(message, user_system_prompt(card), reply, card)


@pytest.mark.parametrize(
    ("message", "reply", "astray"),
    [
        # What the bundled 270M model wrote as the user: the first tokens of its instructions.
        ("You are playing a user who is talking to an AI assistant.", ASKED, "repeats"),
        ("Never invent a fact. Every name, number, date, e-mail address", ASKED, "repeats"),
        ("Please add my dentist appointment to the calendar.", ASKED, "answers no question"),
        ("", ASKED, "empty"),
        # The assistant's part, a tool call, or the opening said again in answer to a question.
        ("Assistant: Sure, I will add your dentist appointment.", ASKED, "assistant's part"),
        ("It's at 15:00. Assistant: Thank you!", ASKED, "assistant's part"),
        ('create_event(title="Dentist", start="2026-03-12T15:00")', ASKED, "tool call"),
        ("I have added your dentist appointment to your calendar.", ASKED, "as the assistant"),
        ("Please put my dentist appointment on my calendar.", ASKED, "restates its opening"),
        # A user that plays the user is none of these.
        ("It starts at 15:00.", ASKED, None),
        ("At 3pm, I think.", ASKED, None),
        ("I don't know, sorry.", ASKED, None),
        # Answers in words, and "don't know" in other phrasings and languages.
        ("Three in the afternoon.", ASKED, None),
        ("Fünfzehn Uhr.", ASKED, None),
        ("Sorry, I have no clue.", ASKED, None),
        ("I'm not entirely sure.", ASKED, None),
        ("Keine Ahnung.", ASKED, None),
        ("Ni idea.", ASKED, None),
        ("Yes, please.", "Shall I book it at the start time of 15:00?", None),
        ("Please put my dentist appointment on my calendar.", "How can I help?", None),
        ("I booked a dentist appointment with Dr Okafor.", "Who is it with?", None),
        ("Thanks, that's all.", "Done: it is on your calendar.", None),
    ],
)
def test_a_message_that_does_not_play_the_user_is_off_script(
    message: str, reply: str, astray: str | None
) -> None:
    found = judged(message, reply)
    if astray is None:
        assert found == []
    else:
        assert len(found) == 1 and astray in found[0], found


def test_an_off_script_error_describes_itself_in_one_line() -> None:
    error = UserError(message=1, kind="off_script", facts=["(empty message)"], said="")
    assert error.describe() == "message 1: off script, (empty message)"


def calibration(replies: list[str], tmp_path: Path) -> tuple[bool, str]:
    user = UserModel(model=scripted([{"answer": r} for r in replies], "user-under-test"))
    settings = Settings(data_dir=tmp_path)
    result = calibrate_user(UserCalibrationRequest(user=user), settings)
    return result.passed, result.line()


def test_the_calibration_refuses_a_user_model_that_echoes_its_instructions(
    tmp_path: Path,
) -> None:
    echo = "You are playing a user who is talking to an AI assistant. The assistant can"
    passed, line = calibration([echo, echo, echo], tmp_path)
    assert not passed
    assert line.startswith(
        "user model user-under-test failed the simulated-user calibration: 3 of 3 replies"
    )
    assert "repeats its instructions" in line
    assert "\n" not in line


def test_the_calibration_refuses_a_user_model_that_invents_or_talks_past_the_question(
    tmp_path: Path,
) -> None:
    passed, line = calibration(
        ["It starts at 16:00.", "45 minutes.", "It is at 12 Harley Street."], tmp_path
    )
    assert not passed
    assert "2 of 3" in line and "invented: 16:00" in line


def test_the_calibration_passes_a_user_model_that_plays_the_user(tmp_path: Path) -> None:
    passed, line = calibration(
        ["It starts at 15:00.", "It takes 45 minutes.", "I don't know, sorry."], tmp_path
    )
    assert passed, line
    assert CARD.on_request["start time"] == "15:00"
