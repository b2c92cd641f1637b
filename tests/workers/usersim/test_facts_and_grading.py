"""The deterministic parts of a simulated user's trial: which pieces of a message are facts
not on the card, and the final-state checks read from the farm's calls."""

from __future__ import annotations

import pytest

from mcp_farm.scenarios import find_scenario
from mcp_farm.schema import ToolCallRecord, UserIdentity, UserSimRecord
from mcp_farm.workers.usersim.facts import facts_in, invented
from mcp_farm.workers.usersim.grade import state_problem

CARD = ["order abc-123 placed on 2026-03-10", "send it to ana@example.org", "report.pdf"]


def test_facts_are_taken_apart_most_specific_shape_first() -> None:
    text = (
        "Mail ana@example.org about abc-123 on 2026-03-10 re report.pdf: 3 boxes, 1,200.50 at 10:30"
    )
    assert facts_in(text) == [
        "ana@example.org",
        "2026-03-10",
        "10:30",
        "report.pdf",
        "abc-123",
        "3",
        "1,200.50",
    ]


@pytest.mark.parametrize(
    ("message", "wrong"),
    [
        ("It's order abc-123 from 2026-03-10.", []),
        ("It's order abc-124.", ["abc-124"]),
        ("Send it to bob@example.org instead.", ["bob@example.org"]),
        ("The file is notes.txt", ["notes.txt"]),
        ("I think it was 2026-03-11.", ["2026-03-11"]),
        ("Order 123, placed in 2026.", []),
        ("I ordered 7 of them.", ["7"]),
        ("I ordered 3 of them.", []),  # the month of 2026-03-10
        ("On 10 March at 10am.", ["10am"]),
        ("Yes, the one you said: 4 items.", []),
        ("No numbers here at all.", []),
    ],
)
def test_a_fact_on_neither_the_card_nor_the_agents_replies_is_invented(
    message: str, wrong: list[str]
) -> None:
    assert invented(message, [*CARD, "I found 4 items in your order."]) == wrong


def _record(text: str) -> UserSimRecord:
    identity = UserIdentity(model_id="u", model_key="k", temperature=0, seed=0, guideline="v1")
    read = ToolCallRecord(index=0, server="calendar", tool="list_events", arguments={}, ok=True)
    return UserSimRecord(
        identity=identity,
        state_calls=[read.model_copy(update={"result_text": text, "index": i}) for i in (0, 1)],
    )


def test_the_final_state_is_read_from_the_farms_calls_with_matches_and_lacks() -> None:
    yoga = find_scenario("usersim", "usersim.cancel-yoga")
    assert state_problem(yoga, _record("09:30 Daily standup")) is None
    assert state_problem(yoga, _record("09:30 Daily standup\n18:30 Yoga")) == (
        "final state: list_events(start_date='2026-03-10') still shows /yoga/"
    )
    groceries = find_scenario("usersim", "usersim.groceries-ask-item")
    assert state_problem(groceries, _record("- oat milk")) == (
        "final state: read_note(note_id='groceries') does not show /sourdough bread/"
    )
    empty = _record("").model_copy(update={"state_calls": []})
    assert state_problem(groceries, empty) == (
        "final state: not read (the conversation ended before it could be)"
    )


SLIPS = {
    "usersim.groceries-ask-item": ("Oat milk, 2 cartons.", ["2"]),
    "usersim.dentist-ask-time": ("It starts at 16:00.", ["16:00"]),
    "usersim.landlord-ask-address": ("It's joana@flores.example.", ["joana@flores.example"]),
    "usersim.cancel-yoga": ("It's evt-1009.", ["evt-1009"]),
    "usersim.reminder-ask-day": ("On 2026-03-21, please.", ["2026-03-21"]),
    "usersim.tick-off-water-bill": ("It's r3.", ["r3"]),
    "usersim.book-club-note": ("We meet on 2026-03-27.", ["2026-03-27"]),
    "usersim.invoice-to-accountant": ("It was INV-2292, 1,540.00 EUR.", ["INV-2292", "1,540.00"]),
    "usersim.haircut-ask-day": ("On 2026-03-15 at 10:00.", ["2026-03-15"]),
    "usersim.reply-priya-later": ("21:00 would work.", ["21:00"]),
}
"""Per bundled card, a slip a user could make and the invented facts the check must find."""


@pytest.mark.parametrize("scenario_id", sorted(SLIPS))
def test_every_bundled_card_makes_a_user_slip_detectable(scenario_id: str) -> None:
    card = find_scenario("usersim", scenario_id).user_sim
    assert card is not None
    message, wrong = SLIPS[scenario_id]
    allowed = [card.opening, card.reason, card.satisfied_when, *card.values()]
    assert invented(message, allowed) == wrong
    # The same message with the card's own facts is clean.
    assert invented(" ".join(card.values()), allowed) == []


def test_every_bundled_card_has_a_slip_here() -> None:
    from mcp_farm.scenarios import load_suite

    assert sorted(SLIPS) == sorted(s.id for s in load_suite("usersim").scenarios)
