"""What a time, a date, a quantity or a number written in one of several formats says, as
values that compare whatever the format ("3pm" and 15:00 are one time; "12/03" may be 12 March
or 3 December; "0.75 hours" is 45 minutes): so that a true fact restated another way is not
taken for an invented one."""

from __future__ import annotations

import calendar
import re
from decimal import Decimal

Time = tuple[int, int]
"""(hour 0-23, minute)."""
Date = tuple[int | None, int, int]
"""(year, or None where none was written; month; day)."""

MONTHS: dict[str, int] = {
    **{name: n for n, names in enumerate((
        ("january", "jan", "januar", "janvier", "enero", "ene"),
        ("february", "feb", "februar", "février", "fevrier", "febrero"),
        ("march", "mar", "märz", "maerz", "mars", "marzo"),
        ("april", "apr", "avril", "abril", "abr"),
        ("may", "mai", "mayo"),
        ("june", "jun", "juni", "juin", "junio"),
        ("july", "jul", "juli", "juillet", "julio"),
        ("august", "aug", "août", "aout", "agosto", "ago"),
        ("september", "sep", "sept", "septembre", "septiembre", "setiembre"),
        ("october", "oct", "oktober", "okt", "octobre", "octubre"),
        ("november", "nov", "novembre", "noviembre"),
        ("december", "dec", "dezember", "dez", "décembre", "decembre", "diciembre", "dic"),
    ), start=1) for name in names},
}  # fmt: skip
"""Month names and their usual short forms, in English, German, French and Spanish."""

_MONTH = (
    "(?:"
    + "|".join(sorted(map(re.escape, MONTHS), key=len, reverse=True))
    + r")(?:\.(?=\s*\d))?(?![a-zäéû])"
)
_DAY = r"\d{1,2}(?:st|nd|rd|th|\.|º|er)?"
_YEAR = r"(?:,?\s+(?:de\s+)?(?:19|20)\d\d\b(?![.,]\d))?"
DATE = re.compile(
    r"\b\d{4}([-/.])\d{1,2}\1\d{1,2}(?!\d)"  # 2026-03-12, 2026/03/12 (also before a T)
    r"|\b\d{1,2}([-/.])\d{1,2}\2\d{4}\b"  # 12/03/2026, 12.03.2026, 12-03-2026
    r"|\b\d{1,2}/\d{1,2}(?:/\d{2})?\b"  # 12/03, 12/03/26
    rf"|\b{_DAY}\s+(?:of\s+|de\s+)?{_MONTH}{_YEAR}"  # 12 March, 12th of Mar 2026, 12 de marzo
    rf"|\b{_MONTH}\s+{_DAY}\b{_YEAR}",  # March 12, March 12th, 2026
    re.IGNORECASE,
)
"""A date in a supported format; the day-month order of a numeric one is not assumed."""

TIME = re.compile(
    r"\b(?:1[0-2]|0?[1-9])(?:[:.][0-5]\d)?\s?o'?clock\b|"  # 3 o'clock, 3:30 o'clock (either half)
    r"\b(?:1[0-2]|0?[1-9])(?:[:.][0-5]\d)?\s?(?:[ap]m|[ap]\.m\.?)(?!\w)"  # 3pm, 3:00 p.m., 8.30pm
    r"|\b(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?!\d)"  # 15:00, 9:30, 15:00:00
    r"|\b(?:[01]?\d|2[0-3])h(?:[0-5]\d)?\b",  # 15h, 15h30
    re.IGNORECASE,
)
"""A time of day in a supported format; a bare number ("at 3") is a number, not a time."""

Quantity = tuple[str, Decimal]
"""(dimension, value in the dimension's base unit): ("duration", 2700) is 45 minutes."""

UNITS: dict[str, tuple[str, Decimal]] = {
    **dict.fromkeys(
        (
            "second",
            "seconds",
            "sec",
            "secs",
            "sekunde",
            "sekunden",
            "seconde",
            "secondes",
            "segundo",
            "segundos",
        ),
        ("duration", Decimal(1)),
    ),
    **dict.fromkeys(
        ("minute", "minutes", "min", "mins", "minuten", "minuto", "minutos"),
        ("duration", Decimal(60)),
    ),
    **dict.fromkeys(
        (
            "hour",
            "hours",
            "hr",
            "hrs",
            "h",
            "stunde",
            "stunden",
            "std",
            "heure",
            "heures",
            "hora",
            "horas",
        ),
        ("duration", Decimal(3600)),
    ),
    **dict.fromkeys(
        ("day", "days", "tag", "tage", "tagen", "jour", "jours", "día", "días", "dia", "dias"),
        ("duration", Decimal(86400)),
    ),
    **dict.fromkeys(
        ("week", "weeks", "woche", "wochen", "semaine", "semaines", "semana", "semanas"),
        ("duration", Decimal(604800)),
    ),
    **dict.fromkeys(
        ("l", "litre", "litres", "liter", "liters", "litro", "litros"), ("volume", Decimal(1))
    ),
    **dict.fromkeys(("ml",), ("volume", Decimal("0.001"))),
    **dict.fromkeys(("m", "metre", "metres", "meter", "meters"), ("length", Decimal(1))),
    **dict.fromkeys(
        ("km", "kilometre", "kilometres", "kilometer", "kilometers"), ("length", Decimal(1000))
    ),
    **dict.fromkeys(("mile", "miles"), ("length", Decimal("1609.344"))),
    **dict.fromkeys(("g", "gram", "grams"), ("mass", Decimal(1))),
    **dict.fromkeys(("kg", "kilo", "kilos", "kilogram", "kilograms"), ("mass", Decimal(1000))),
}
"""The units a quantity may be written in, with its dimension and its size in the dimension's
base unit (seconds, metres, grams): a closed list, as the formats of times and dates are."""

QUANTITY = re.compile(
    r"\b\d+(?:[.,]\d+)?\s?(?:"
    + "|".join(sorted((u for u in UNITS if len(u) > 1), key=len, reverse=True))
    + r")\b|\b\d+(?:[.,]\d+)?\s(?:h|m|g|l)\b",
    re.IGNORECASE,
)
"""A number with a unit from UNITS (`45 minutes`, `0.75 hours`, `2 km`); a one-letter unit
only after a space (`15h` is a time of day, `5m` could be minutes or metres)."""

_GROUPED = {
    ",": re.compile(r"(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?"),
    ".": re.compile(r"(\d{1,3}(?:\.\d{3})+|\d+)(?:,(\d+))?"),
}
"""A number with its thousands grouped by the key and its decimals after the other mark."""

_ISO_T = re.compile(r"(\d{4}-\d{1,2}-\d{1,2})T(?=\d)")


def split_datetimes(text: str) -> str:
    """`2026-03-12T15:00` as `2026-03-12 15:00`, so that its date and time are read apart."""
    return _ISO_T.sub(r"\1 ", text)


def time_readings(piece: str) -> set[Time]:
    """The times a TIME piece may mean: one, or two for "o'clock" (morning or afternoon)."""
    low = piece.lower()
    numbers = [int(n) for n in re.findall(r"\d+", low)]
    hour, minute = numbers[0], numbers[1] if len(numbers) > 1 else 0
    half = re.search(r"([ap])\.?m", low)
    if half:
        return {(hour % 12 + (12 if half.group(1) == "p" else 0), minute)}
    if "clock" in low:
        return {(hour % 12, minute), (hour % 12 + 12, minute)}
    return {(hour, minute)}


def _valid(year: int | None, month: int, day: int) -> bool:
    """A real day; a date without a year may be 29 February (of a leap year)."""
    if not 1 <= month <= 12 or day < 1:
        return False
    return day <= calendar.monthrange(year or 2024, month)[1]


def _month_of(piece: str) -> int | None:
    named = re.search(r"[^\W\d_]{3,}", piece.lower())
    if named is None:
        return None
    return MONTHS.get(named.group()) or MONTHS.get(named.group()[:3])


def date_readings(piece: str) -> set[Date]:
    """Every real date a DATE piece may mean: a numeric day and month without a year first
    (`12/03/2026`) are read both ways; a two-digit year is in this century."""
    numbers = [int(n) for n in re.findall(r"\d+", piece)]
    month = _month_of(piece)
    if month is not None:
        found: list[Date] = [(numbers[1] if len(numbers) > 1 else None, month, numbers[0])]
    elif re.match(r"\d{4}\D", piece):
        found = [(numbers[0], numbers[1], numbers[2])]
    else:
        year = numbers[2] if len(numbers) > 2 else None
        year = year + 2000 if year is not None and year < 100 else year
        found = [(year, numbers[1], numbers[0]), (year, numbers[0], numbers[1])]
    return {d for d in found if _valid(*d)}


def number_readings(piece: str) -> set[Decimal]:
    """The values a number may have: `1,450.00` and `1.450,00` are 1450; `1,450` is 1450 or
    1.45 (both kept: which one was meant cannot be told); none for `10:30:15`-like pieces."""
    values = set()
    for group, pattern in _GROUPED.items():
        match = pattern.fullmatch(piece)
        if match:
            values.add(Decimal(match.group(1).replace(group, "") + "." + (match.group(2) or "0")))
    return values


def quantity_readings(piece: str) -> set[Quantity]:
    """The values a QUANTITY piece may have, in its dimension's base unit (a decimal comma or
    point alike: `0,75 hours` and `0.75 hours` are both 45 minutes)."""
    match = re.fullmatch(r"(\d+(?:[.,]\d+)?)\s?([^\W\d_]+)", piece.lower())
    if match is None or match.group(2) not in UNITS:
        return set()
    dimension, size = UNITS[match.group(2)]
    return {(dimension, value * size) for value in number_readings(match.group(1))}


def number_as_time(piece: str) -> set[Time]:
    """The time a number like `20.30` may be (hours and minutes written with a dot)."""
    match = re.fullmatch(r"([01]?\d|2[0-3])[.:]([0-5]\d)", piece)
    return set() if match is None else {(int(match.group(1)), int(match.group(2)))}


def same_day(date: Date, other: Date) -> bool:
    """The same month and day, in the same year where both name one."""
    year, month, day = date
    return (month, day) == other[1:] and (year is None or other[0] in (None, year))
