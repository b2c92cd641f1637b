"""The simulated user's per-message check is itself checked: on a labelled set of user
messages (tests/workers/usersim/data/user_messages.yaml: compliant replies, off-script ones,
invented and volunteered facts, stops at a question; addresses, numbers, times and dates in
English, German, French and Spanish forms, in digits and in words), its precision and recall
for each kind of user error, and for finding none, are each 95% or more. `python -m
bench.usercheck` prints the same table (docs/simulated-user.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.usercheck import KINDS, found, load, measure
from mcp_farm.schema import Settings, UserModel
from mcp_farm.schema.tasks.messages import UserCalibrationRequest
from mcp_farm.workers.usersim.calibrate import calibrate_user
from tests.helpers import scripted

CASES = load()


def test_the_labelled_set_holds_at_least_200_messages_and_every_kind() -> None:
    assert len(CASES) >= 200
    labelled = {kind for case in CASES for kind in case.errors}
    assert labelled == set(KINDS) - {"compliant"}
    assert sum(not case.errors for case in CASES) >= 100


@pytest.mark.parametrize("kind", KINDS)
def test_the_user_check_finds_each_kind_with_95_percent_precision_and_recall(kind: str) -> None:
    scores, misses = measure(CASES)
    score = scores[kind]
    wrong = [(c.agent, c.user, sorted(c.errors), sorted(got)) for c, got in misses]
    assert score.labelled >= 15, score
    assert score.precision >= 0.95, (score, wrong)
    assert score.recall >= 0.95, (score, wrong)


@pytest.mark.parametrize(
    "message",
    [
        "Three quarters of an hour.",
        "Sorry, I have no clue.",
        "Fünfundvierzig Minuten.",
        "Je ne sais pas.",
    ],
)
def test_a_compliant_answer_in_words_or_another_language_is_no_user_error(message: str) -> None:
    [case] = [c for c in CASES if c.user == message]
    assert case.errors == frozenset() and found(case) == frozenset()


def test_the_calibration_passes_a_user_model_that_answers_in_words(tmp_path: Path) -> None:
    replies = ["Three o'clock in the afternoon.", "Three quarters of an hour.", "Sorry, no clue."]
    user = UserModel(model=scripted([{"answer": r} for r in replies], "words-user"))
    result = calibrate_user(UserCalibrationRequest(user=user), Settings(data_dir=tmp_path))
    assert result.passed, result.line()


def test_the_calibration_refuses_a_user_model_that_writes_the_assistants_part(
    tmp_path: Path,
) -> None:
    replies = ["Assistant: Sure, I will add it at 15:00.", "45 minutes.", "I don't know."]
    user = UserModel(model=scripted([{"answer": r} for r in replies], "assistant-user"))
    result = calibrate_user(UserCalibrationRequest(user=user), Settings(data_dir=tmp_path))
    assert not result.passed
    assert "1 of 3" in result.line() and "writes the assistant's part" in result.line()
