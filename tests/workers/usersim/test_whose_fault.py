"""The user's mistakes beyond invented facts, with a scripted user through the real fixture
servers: a user that stops at the agent's question before the change is made left early (and
the failure is its own); the same stop once everything is done is no mistake; a user that gives
a fact its card keeps for when it is asked, unasked, volunteered it (and a milestone the agent
then had no need to meet fails through the user)."""

from __future__ import annotations

import pytest

from mcp_farm.schema import Settings, UserError
from mcp_farm.workers.usersim.facts import volunteered
from tests.workers.usersim.test_simulated_user import AT_FOUR, DENTIST, IDEAL, STOP, call, run, say

ASK = say("What time does it start, and how long is it?")
BOOK = call(
    "create_event", title="Dentist (Dr Okafor)", start="2026-03-12T15:00", end="2026-03-12T15:45"
)
TRUE = say("It starts at 15:00 and takes 45 minutes.")


@pytest.mark.integration
@pytest.mark.parametrize(
    ("parting", "said"),
    [
        ("Never mind, bye ###STOP###", "Never mind, bye"),
        ("###STOP###", ""),
        # A user model that wrote nothing stopped there too: one error for the one stop, not
        # an `off_script` empty message beside it.
        ("", ""),
    ],
)
def test_a_user_that_stops_at_the_agents_question_before_the_change_left_early_and_is_blamed(
    parting: str, said: str, settings: Settings
) -> None:
    result = run(DENTIST, [ASK], [say(parting)], settings)
    assert result.outcome == "no_tool_call"
    assert result.user_sim is not None
    assert (result.user_sim.ended, result.user_sim.messages) == ("user_stop", 1)
    assert result.user_sim.errors == [UserError(message=1, kind="left_early", facts=[], said=said)]
    assert result.failure_source == "user"


@pytest.mark.integration
def test_a_stop_at_the_agents_question_once_everything_is_done_is_no_user_error(
    settings: Settings,
) -> None:
    agent = [ASK, BOOK, say("Done: Dentist on 12 March, 15:00 to 15:45. Anything else?")]
    result = run(DENTIST, agent, [TRUE, say("No, thanks. ###STOP###")], settings)
    assert (result.outcome, result.failure_source) == ("pass", "none")
    assert result.user_sim is not None and result.user_sim.errors == []


@pytest.mark.integration
def test_a_stop_at_a_question_with_the_booking_made_leaves_a_missed_milestone_to_the_agent(
    settings: Settings,
) -> None:
    # The agent guessed the time right and never asked for it: the user's stop is no mistake.
    agent = [BOOK, say("Booked for 15:00. Anything else?")]
    result = run(DENTIST, agent, [STOP], settings)
    assert (result.outcome, result.detail) == (
        "output_mismatch",
        "the agent never asked about /time|when|what hour/",
    )
    assert result.user_sim is not None and result.user_sim.errors == []
    assert result.failure_source == "agent"


@pytest.mark.integration
def test_a_user_that_leaves_early_after_the_agents_wrong_call_does_not_take_the_blame(
    settings: Settings,
) -> None:
    agent = [AT_FOUR[1], say("Booked for 16:00. Shall I add a reminder?")]
    result = run(DENTIST, agent, [STOP], settings)
    assert result.outcome == "wrong_params"
    assert result.user_sim is not None
    assert [e.kind for e in result.user_sim.errors] == ["left_early"]
    assert result.failure_source == "agent"


@pytest.mark.integration
def test_a_user_that_volunteers_an_on_request_fact_fails_the_milestone_through_the_user(
    settings: Settings,
) -> None:
    agent = [say("Sure, I can add it."), BOOK, say("Done: Dentist on 12 March, 15:00 to 15:45.")]
    result = run(DENTIST, agent, [TRUE, STOP], settings)
    assert (result.outcome, result.detail) == (
        "output_mismatch",
        "the agent never asked about /time|when|what hour/",
    )
    assert result.user_sim is not None
    assert result.user_sim.errors == [
        UserError(message=1, kind="volunteered", facts=["15:00", "45 minutes"], said=TRUE["answer"])
    ]
    assert result.failure_source == "user"


@pytest.mark.integration
def test_the_same_facts_given_when_asked_are_no_user_error(settings: Settings) -> None:
    agent, user = IDEAL["usersim.dentist-ask-time"]
    result = run(DENTIST, agent, user, settings)
    assert result.user_sim is not None and result.user_sim.errors == []


@pytest.mark.parametrize(
    ("message", "given", "found"),
    [
        ("Oat milk, please.", [], ["Oat milk"]),
        ("Some milk, please.", [], []),
        ("Yes, the oat milk.", ["Shall I add oat milk"], []),
        ("At 3pm, for 45 minutes.", [], ["3pm", "45 minutes"]),
        ("At 3pm, for 45 minutes.", ["It starts at 15:00."], ["45 minutes"]),
        ("At 3pm, for 0.75 hours.", ["It starts at 15:00."], ["0.75 hours"]),
        ("At 3pm, for 45 km.", ["It starts at 15:00."], []),
        ("It's on 2026-03-12.", [], []),
    ],
)
def test_a_message_volunteers_the_on_request_facts_the_agent_does_not_have_yet(
    message: str, given: list[str], found: list[str]
) -> None:
    on_request = ["oat milk", "15:00", "45 minutes"]
    opening = "Please put my dentist appointment on my calendar for Thursday 2026-03-12."
    assert volunteered(message, on_request, [opening, *given]) == found


def test_each_kind_of_user_error_describes_itself_in_one_line() -> None:
    errors = [
        UserError(message=2, facts=["16:00", "B-12"], said="x"),
        UserError(message=1, kind="volunteered", facts=["15:00"], said="x"),
        UserError(message=3, kind="left_early", facts=[], said=""),
    ]
    assert [e.describe() for e in errors] == [
        "message 2: invented 16:00, B-12",
        "message 1: volunteered 15:00",
        "message 3: left early (stopped at the agent's question)",
    ]
