"""A true fact restated in another format is not an invented one: times, dates and amounts on
a card are read by value, so a user that writes "3pm" for the card's 15:00 is not flagged,
while another value written the same way still is."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from decimal import Decimal

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mcp_farm.scenarios import find_scenario
from mcp_farm.workers.usersim.facts import invented


def card_of(scenario_id: str) -> list[str]:
    card = find_scenario("usersim", scenario_id).user_sim
    assert card is not None
    return [card.opening, card.reason, card.satisfied_when, *card.values()]


@pytest.mark.parametrize(
    ("scenario_id", "message", "wrong"),
    [
        ("usersim.dentist-ask-time", "It's at 3pm and takes 45 minutes.", []),
        ("usersim.dentist-ask-time", "3:00 p.m., on 12/03.", []),
        ("usersim.dentist-ask-time", "Thursday, March 12th at 15h.", []),
        ("usersim.dentist-ask-time", "It's at 3, I think.", []),
        ("usersim.dentist-ask-time", "It's at 4pm.", ["4pm"]),
        ("usersim.dentist-ask-time", "It's on 13/03.", ["13/03"]),
        ("usersim.dentist-ask-time", "It's on 12 April.", ["12 April"]),
        ("usersim.invoice-to-accountant", "It was INV-2291, 1450 EUR.", []),
        ("usersim.invoice-to-accountant", "I paid 1.450,00 EUR.", []),
        ("usersim.invoice-to-accountant", "I paid 1,450 EUR.", []),
        ("usersim.invoice-to-accountant", "I paid 1540 EUR.", ["1540"]),
        ("usersim.reminder-ask-day", "On 20 March 2026, please.", []),
        ("usersim.reminder-ask-day", "On 20 March 2027, please.", ["20 March 2027"]),
    ],
)
def test_a_bundled_cards_fact_restated_is_known_and_another_value_is_not(
    scenario_id: str, message: str, wrong: list[str]
) -> None:
    assert invented(message, card_of(scenario_id)) == wrong


def said(piece: str) -> str:
    """A user message around one fact, with no other fact-shaped text."""
    return f"It was {piece} I believe"


TIME_FORMATS: dict[str, Callable[[int, int], str | None]] = {
    "HH:MM": lambda h, m: f"{h:02d}:{m:02d}",
    "H:MM": lambda h, m: f"{h}:{m:02d}",
    "HH:MM:SS": lambda h, m: f"{h:02d}:{m:02d}:00",
    "H:MM pm": lambda h, m: f"{h % 12 or 12}:{m:02d} {'pm' if h >= 12 else 'am'}",
    "H:MMPM": lambda h, m: f"{h % 12 or 12}:{m:02d}{'PM' if h >= 12 else 'AM'}",
    "H:MM p.m.": lambda h, m: f"{h % 12 or 12}:{m:02d} {'p' if h >= 12 else 'a'}.m.",
    "Hpm": lambda h, m: None if m else f"{h % 12 or 12}{'pm' if h >= 12 else 'am'}",
    "H pm": lambda h, m: None if m else f"{h % 12 or 12} {'pm' if h >= 12 else 'am'}",
    "Hh": lambda h, m: None if m else f"{h}h",
    "HhMM": lambda h, m: f"{h}h{m:02d}",
    "H o'clock": lambda h, m: None if m else f"{h % 12 or 12} o'clock",
}
"""Each supported way of writing a time; None where the format cannot show the time."""


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 23),
    st.integers(0, 59),
    st.integers(0, 23),
    st.integers(0, 59),
    st.sampled_from(sorted(TIME_FORMATS)),
)
def test_a_cards_time_in_any_supported_format_is_known_and_another_time_is_not(
    hour: int, minute: int, other_hour: int, other_minute: int, name: str
) -> None:
    card = [f"The appointment starts at {hour:02d}:{minute:02d}."]
    write = TIME_FORMATS[name]
    same = write(hour, minute)
    if same is not None:
        assert invented(said(same), card) == []
    other = write(other_hour, other_minute)
    assume(other is not None and (other_hour, other_minute) != (hour, minute))
    assert other is not None
    if name == "H o'clock":  # morning or afternoon: either reading may be the card's
        assume(other_hour % 12 != hour % 12)
    assert invented(said(other), card) == [other]


MONTH = ["January", "February", "March", "April", "May", "June", "July", "August"]
MONTH += ["September", "October", "November", "December"]

DATE_FORMATS: dict[str, Callable[[date], str]] = {
    "YYYY-MM-DD": lambda d: d.isoformat(),
    "YYYY/MM/DD": lambda d: f"{d.year}/{d.month:02d}/{d.day:02d}",
    "D/M": lambda d: f"{d.day}/{d.month}",
    "DD/MM": lambda d: f"{d.day:02d}/{d.month:02d}",
    "M/D": lambda d: f"{d.month}/{d.day}",
    "D/M/YYYY": lambda d: f"{d.day}/{d.month}/{d.year}",
    "M/D/YYYY": lambda d: f"{d.month}/{d.day}/{d.year}",
    "DD/MM/YY": lambda d: f"{d.day:02d}/{d.month:02d}/{d.year % 100:02d}",
    "DD.MM.YYYY": lambda d: f"{d.day:02d}.{d.month:02d}.{d.year}",
    "DD-MM-YYYY": lambda d: f"{d.day:02d}-{d.month:02d}-{d.year}",
    "D Month": lambda d: f"{d.day} {MONTH[d.month - 1]}",
    "Dth of Month": lambda d: f"{d.day}th of {MONTH[d.month - 1]}",
    "D Mon YYYY": lambda d: f"{d.day} {MONTH[d.month - 1][:3]} {d.year}",
    "Month D": lambda d: f"{MONTH[d.month - 1]} {d.day}",
    "Month D, YYYY": lambda d: f"{MONTH[d.month - 1]} {d.day}, {d.year}",
}
"""Each supported way of writing a date."""

YEARLESS = {"D/M", "DD/MM", "M/D", "D Month", "Dth of Month", "Month D"}
"""Formats without a year: another date on the same day of another year reads the same."""
SWAPPABLE = {"D/M", "DD/MM", "M/D", "D/M/YYYY", "M/D/YYYY", "DD/MM/YY", "DD.MM.YYYY"}
SWAPPABLE |= {"DD-MM-YYYY"}
"""Numeric formats whose day and month may be read either way round."""

DATES = st.dates(date(2000, 1, 1), date(2099, 12, 31))


@settings(max_examples=300, deadline=None)
@given(DATES, DATES, st.sampled_from(sorted(DATE_FORMATS)))
def test_a_cards_date_in_any_supported_format_is_known_and_another_date_is_not(
    day: date, other: date, name: str
) -> None:
    card = [f"The appointment is on {day.isoformat()}."]
    write = DATE_FORMATS[name]
    assert invented(said(write(day)), card) == []
    assume(other != day)
    if name in YEARLESS:
        assume((other.month, other.day) != (day.month, day.day))
    if name in SWAPPABLE:
        assume((other.day, other.month) != (day.month, day.day))
    assert invented(said(write(other)), card) == [write(other)]


def english(value: Decimal) -> str:
    return f"{value:,.2f}"


AMOUNT_FORMATS: dict[str, Callable[[Decimal], str | None]] = {
    "1450": lambda v: None if v % 1 else f"{v:.0f}",
    "1450.00": lambda v: f"{v:.2f}",
    "1,450.00": english,
    "1.450,00": lambda v: english(v).replace(",", "_").replace(".", ",").replace("_", "."),
    "1450,00": lambda v: f"{v:.2f}".replace(".", ","),
}
"""Each unambiguous way of writing an amount; None where the format cannot show it."""

GROUPED_ONLY: dict[str, Callable[[Decimal], str | None]] = {
    "1,450": lambda v: None if v % 1 else f"{v:,.0f}",
    "1.450": lambda v: None if v % 1 else f"{v:,.0f}".replace(",", "."),
}
"""Whole amounts grouped by thousands with no decimals: 1,450 might be 1.45, so both readings
are kept, and only the card's value is checked here."""

AMOUNTS = st.integers(0, 10**9).map(lambda cents: Decimal(cents) / 100)


@settings(max_examples=300, deadline=None)
@given(AMOUNTS, AMOUNTS, st.sampled_from(sorted(AMOUNT_FORMATS | GROUPED_ONLY)))
def test_a_cards_amount_in_any_supported_format_is_known_and_another_amount_is_not(
    value: Decimal, other: Decimal, name: str
) -> None:
    card = [f"I paid {english(value)} EUR."]
    write = (AMOUNT_FORMATS | GROUPED_ONLY)[name]
    same = write(value)
    if same is not None:
        assert invented(said(same), card) == []
    # A number that is a run of the card's digits is known (an id's digits, a date's day).
    digits = {Decimal(run) for run in re.findall(r"\d+", card[0])}
    written = write(other)
    assume(name in AMOUNT_FORMATS and written is not None)
    assume(other != value and other not in digits)
    assert invented(said(str(written)), card) == [written]


@pytest.mark.parametrize(
    ("message", "wrong"),
    [
        # Quantities compare with their units: the card's 45 minutes, however written.
        ("It takes 0.75 hours.", []),
        ("It takes 0,75 hours.", []),
        ("It takes 45 mins.", []),
        ("It takes 2700 seconds.", []),
        ("It takes 0.5 hours.", ["0.5 hours"]),
        ("It takes 45 km.", ["45 km"]),
        # A time written with a dot is a time.
        ("It's at 3.00pm.", []),
        ("It's at 15.00.", []),
        ("It's at 8.30pm.", ["8.30pm"]),
        # A card number in another role is not known: the street number is the address's.
        ("I live at 45 Baker Street.", ["45 Baker Street"]),
        ("I live at 15 Baker Street.", ["15 Baker Street"]),
    ],
)
def test_a_number_is_known_only_in_a_role_and_unit_that_fit(message: str, wrong: list[str]) -> None:
    assert invented(message, card_of("usersim.dentist-ask-time")) == wrong


@pytest.mark.parametrize(
    ("message", "card", "wrong"),
    [
        ("It takes 0.75 hours.", "length: 45 minutes", []),
        ("It takes 0.5 hours.", "length: 30 minutes", []),
        ("It takes 30 minutes.", "length: 0.5 hours", []),
        ("It takes 30 minutes.", "length: 30", []),
        ("At 8.30pm, please.", "start: 20:30", []),
        ("At 8.30 pm, please.", "start: 20:30", []),
        ("At 20.30, please.", "start: 8:30 pm", []),
        ("I live at 12 Elm Road.", "address: 12 Elm Road; flat: 3", []),
        ("I live at 3 Elm Road.", "address: 12 Elm Road; flat: 3", ["3 Elm Road"]),
    ],
)
def test_outside_restatements_of_quantities_times_and_addresses_are_judged_by_value(
    message: str, card: str, wrong: list[str]
) -> None:
    assert invented(message, [card]) == wrong
