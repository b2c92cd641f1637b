"""Whether a simulated user's message holds a fact it was never given: every piece of text
shaped like a fact (an e-mail address, a street address, a date, a time, a quantity with its
unit, a file name, an id, a number) must occur on its card or in what the agent had said to it,
read by value where it has one (a time, a date, a quantity, a number), so that "3pm" is the
card's 15:00 and "0.75 hours" its 45 minutes; one that does not is the user's invention. A
number counts as known only in a role that fits: a quantity as a known quantity of its
dimension (or a number known without a unit), a street number as part of a known address. And
which of its facts a message gave that the card keeps for when the agent asks.

Deterministic on purpose: a user error must be found the same way in every trial, by no
model, so that a failure can be attributed without a judge of its own."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

from mcp_farm.workers.usersim.readings import (
    DATE,
    QUANTITY,
    TIME,
    Date,
    Quantity,
    Time,
    date_readings,
    number_as_time,
    number_readings,
    quantity_readings,
    same_day,
    split_datetimes,
    time_readings,
)
from mcp_farm.workers.usersim.words import in_digits

_CAPS = r"[A-ZÀ-Ý][\w'-]*"
_OF = r"(?:(?:de|del|de la|de los|des|du|d'|di|della|da|do|dos|das|von|van)\s*)?"
_ENGLISH = (
    r"(?:Street|Road|Avenue|Lane|Drive|Boulevard|Way|Place|Court|Square|Terrace|Close|Crescent"
    r"|Row|(?:St|Rd|Ave|Ln|Blvd|Pl|Ct|Sq)\.?)"
)
_LATIN = (
    r"(?:[Rr]ue|[Aa]venue|[Bb]oulevard|[Pp]lace|[Aa]llée|[Cc]hemin|[Qq]uai|[Ii]mpasse|[Rr]oute"
    r"|Calle|C/|Avenida|Paseo|Plaza|Carrer|Camino|Via|Viale|Piazza|Corso|Rua|Travessa|Largo"
    r"|Praça|(?:[Bb]d|Avda|Av)\.?)"
)
_GERMAN = (
    r"[A-ZÄÖÜ][\wäöüß-]*(?:straße|strasse|str\.|weg|gasse|platz|allee|ring|damm|ufer"
    r"|straat|laan|gracht|plein)"
)
_NUMBER = r"\d+[A-Za-z]?(?:\s?(?:bis|ter))?"
STREET = re.compile(
    rf"\b{_NUMBER},?\s+(?:{_CAPS}\s+){{1,3}}{_ENGLISH}(?!\w)"  # 45 Baker Street
    rf"|\b(?:{_CAPS}\s+){{1,3}}{_ENGLISH}\s+{_NUMBER}\b"  # Baker Street 45
    rf"|\b{_NUMBER},?\s+{_LATIN}\s+{_OF}{_CAPS}(?:[\s-]+{_CAPS})*"  # 45, rue de Rivoli
    # Calle Mayor 45
    rf"|(?<!\w){_LATIN}\s+{_OF}{_CAPS}(?:\s+{_CAPS})*,?\s+(?:n[º°o]\.?\s*)?{_NUMBER}\b"
    rf"|\b{_GERMAN}(?:\s+{_CAPS})?,?\s+{_NUMBER}\b"  # Hauptstraße 12
    # Unter den Linden 5
    rf"|\b(?:{_CAPS}\s+){{1,2}}(?:Straße|Strasse|Weg|Platz|Allee)\s+{_NUMBER}\b"
)
"""A street address's number and street, in English, French, Spanish, Italian, Portuguese,
German and Dutch word orders (`45 Baker Street`, `Baker Street 45`, `45, rue de Rivoli`, `Calle
Mayor 45`, `Hauptstraße 12`): its number is the address's, so it is checked as part of an
address, never as a number the card holds in another role."""

_STREET_WORDS = {
    "st": "street", "rd": "road", "ave": "avenue", "ln": "lane",
    "blvd": "boulevard", "bd": "boulevard", "pl": "place", "ct": "court", "sq": "square",
    "c/": "calle", "avda": "avenida", "av": "avenida", "str": "straße", "strasse": "straße",
}  # fmt: skip
_FILLER = frozenset(["de", "del", "la", "los", "des", "du", "d'", "di", "della", "da", "do", "dos",
                     "das", "von", "van", "nº", "n°", "no"])  # fmt: skip


def address_key(piece: str) -> tuple[str, frozenset[str]]:
    """An address as its number and its street's words, whatever their order and abbreviation:
    `Baker Street 45` and `45 Baker St.` are one address, `Calle Mayor, 45` and `C/ Mayor 45`
    another."""
    low = re.sub(r"str(?:\.|asse\b)", "straße", piece.lower()).replace("straße", " straße")
    number = re.search(r"\d+[a-z]?(?:\s?(?:bis|ter)\b)?", low)
    words = re.findall(r"c/|[^\W\d_]+'?", low.replace(number.group() if number else "", " ", 1))
    street = frozenset(_STREET_WORDS.get(w.rstrip("."), w) for w in words if w not in _FILLER)
    return (number.group().replace(" ", "") if number else "", street)


SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("address", STREET),
    ("date", DATE),
    ("time", TIME),
    ("quantity", QUANTITY),
    (
        "file",
        re.compile(
            r"\b[\w-]+\.(?:txt|md|pdf|docx?|xlsx?|csv|json|ya?ml|py|js|ts|html?|png|jpe?g|gif"
            r"|zip|log|ini|toml|cfg|sh|ics|eml|pptx?|odt)\b",
            re.IGNORECASE,
        ),
    ),
    ("id", re.compile(r"\b[A-Za-z]+[-_]?\d+(?:[-_][A-Za-z0-9]+)*\b")),
    ("number", re.compile(r"\d+(?:[.,:]\d+)*")),
)
"""The shapes a fact takes, most specific first: a message's text is taken apart in this
order, so the digits of an id, a date or a time are not checked again as a number."""

DIGITS = re.compile(r"\d+")


@dataclass
class Known:
    """What some texts hold, by value: their times, dates and numbers, the numbers inside
    them (digit runs, a time's hours and minutes, a date's year, month and day), and every
    fact-shaped piece as text."""

    times: set[Time] = field(default_factory=set)
    dates: set[Date] = field(default_factory=set)
    quantities: set[Quantity] = field(default_factory=set)
    numbers: set[Decimal] = field(default_factory=set)
    bare: set[Decimal] = field(default_factory=set)
    """The numbers written without a unit (nor as part of a time, a date or an id)."""
    parts: set[Decimal] = field(default_factory=set)
    pieces: set[str] = field(default_factory=set)
    addresses: set[tuple[str, frozenset[str]]] = field(default_factory=set)
    """Every street address, as its number and its street's words (address_key)."""
    text: str = ""
    """The texts themselves, lower-cased, for a fact found inside a longer word."""

    def add(self, shape: str, piece: str) -> None:
        self.pieces.add(_norm(piece))
        if shape == "address":
            self.addresses.add(address_key(piece))
        elif shape == "time":
            for hour, minute in time_readings(piece):
                self.times.add((hour, minute))
                self.parts |= {Decimal(hour), Decimal(hour % 12 or 12), Decimal(minute)}
        elif shape == "date":
            for year, month, day in date_readings(piece):
                self.dates.add((year, month, day))
                self.parts |= {Decimal(n) for n in (year, month, day) if n is not None}
        elif shape == "quantity":
            self.quantities |= quantity_readings(piece)
            self.numbers |= number_readings(re.sub(r"\s?[^\W\d_]+$", "", piece))
        elif shape == "number":
            self.numbers |= number_readings(piece)


def _norm(fact: str) -> str:
    return fact.lower().replace(",", "")


def pieces(text: str) -> list[tuple[str, str]]:
    """The fact-shaped pieces of a message with their shapes, in the order of SHAPES, each
    once."""
    found: list[tuple[str, str]] = []
    rest = split_datetimes(in_digits(text))
    for shape, pattern in SHAPES:
        for match in pattern.finditer(rest):
            if (shape, match.group()) not in found:
                found.append((shape, match.group()))
        rest = pattern.sub(" ", rest)
    return found


def facts_in(text: str) -> list[str]:
    """The fact-shaped pieces of a message, in the order of SHAPES, each once."""
    return list(dict.fromkeys(piece for _shape, piece in pieces(text)))


def known_in(texts: list[str]) -> Known:
    """What the given texts hold: every piece of every shape, found without taking the text
    apart (so an id's digits are known as a number too), and every run of digits."""
    joined = split_datetimes(in_digits("\n".join(texts)))
    known = Known(text=joined.lower())
    for shape, pattern in SHAPES:
        for match in pattern.finditer(joined):
            known.add(shape, match.group())
    known.parts |= {Decimal(m.group()) for m in DIGITS.finditer(joined)}
    for shape, piece in pieces(joined):
        if shape == "number":
            known.bare |= number_readings(piece)
    return known


def _has(shape: str, piece: str, known: Known, whole: bool = False) -> bool:
    """Whether `known` holds the piece: a time, date or number by any of its readings (with
    `whole`, a number only as a number of its own, never as part of another fact); any other
    piece (or one that reads as no value) as text, or inside a longer word unless it is all
    digits."""
    if shape == "time":
        return bool(time_readings(piece) & known.times)
    if shape == "address":
        # The same number on the same street, in any word order or abbreviation.
        number, street = address_key(piece)
        if any(n == number and (street <= s or s <= street) for n, s in known.addresses):
            return True
    if shape == "quantity":
        # A quantity is known as a quantity of its dimension, or as a number the card gives
        # without a unit ("length: 45"); never by a number that has another unit.
        value = number_readings(re.sub(r"\s?[^\W\d_]+$", "", piece))
        return bool(quantity_readings(piece) & known.quantities or value & known.bare)
    if shape == "number" and number_as_time(piece) & known.times:
        return True  # 20.30 for the card's 20:30
    dates = date_readings(piece) if shape == "date" else set()
    if dates:
        return any(same_day(d, k) for d in dates for k in known.dates)
    values = number_readings(piece) if shape == "number" else set()
    if values:
        return bool(values & (known.numbers if whole else known.numbers | known.parts))
    norm = _norm(piece)
    if norm in known.pieces:
        return True
    return not whole and not DIGITS.fullmatch(re.sub(r"[.:/-]", "", norm)) and norm in known.text


def invented(message: str, allowed: list[str]) -> list[str]:
    """The facts of `message` that occur in none of the `allowed` texts (the card's own and
    the agent's replies so far). A number must be one of theirs by value, or a part of one of
    their facts ("3" is not in "2023", but is the hour of 15:00); a longer fact may also occur
    inside their text."""
    known = known_in(allowed)
    found = [piece for shape, piece in pieces(message) if not _has(shape, piece, known)]
    return list(dict.fromkeys(found))


def volunteered(message: str, facts: list[str], given: list[str]) -> list[str]:
    """The pieces of `message` that state one of `facts` (the card's `on_request` values)
    that none of the `given` texts (what the agent already has) holds. A fact with no
    fact-shaped piece ("oat milk") is found as words, case-insensitively."""
    had = known_in(given)
    shaped = [(s, p) for fact in facts for s, p in pieces(fact)]
    wanted = Known()
    for shape, piece in shaped:
        wanted.add(shape, piece)
    found = [
        piece
        for shape, piece in pieces(message)
        if _has(shape, piece, wanted, whole=True) and not _has(shape, piece, had)
    ]
    for fact in facts:
        said = re.search(rf"(?<!\w){re.escape(fact)}(?!\w)", message, re.IGNORECASE)
        if said and not pieces(fact) and fact.lower() not in had.text:
            found.append(said.group())
    return list(dict.fromkeys(found))
