"""Facts a simulated user writes in words, rewritten in digits before the fact check reads
them: "three quarters of an hour" is 0.75 hours, "half past eight in the evening" 8:30 pm,
"fünfundvierzig Minuten" 45 minutes, "le 20 mars" 20 March, "fourteen hundred and fifty euros"
1450 euros. English, German, French and Spanish, in a closed list of forms (like the digit
formats in readings.py), so the check stays the same everywhere. A word that is mostly not a
number ("one", "a", "once", "elf", "cent") counts only beside a unit or a time of day."""

from __future__ import annotations

import re
from collections.abc import Callable

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
    # German
    "null": 0, "eins": 1, "ein": 1, "eine": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5,
    "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "elf": 11, "zwölf": 12,
    "dreizehn": 13, "vierzehn": 14, "fünfzehn": 15, "sechzehn": 16, "siebzehn": 17,
    "achtzehn": 18, "neunzehn": 19, "zwanzig": 20, "dreißig": 30, "vierzig": 40,
    "fünfzig": 50, "sechzig": 60, "siebzig": 70, "achtzig": 80, "neunzig": 90,
    # French
    "un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "sept": 7, "huit": 8,
    "neuf": 9, "dix": 10, "onze": 11, "douze": 12, "treize": 13, "quatorze": 14,
    "quinze": 15, "seize": 16, "vingt": 20, "trente": 30, "quarante": 40, "cinquante": 50,
    "soixante": 60, "octante": 80,
    # Spanish
    "cero": 0, "uno": 1, "una": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6,
    "siete": 7, "ocho": 8, "nueve": 9, "diez": 10, "once": 11, "doce": 12, "trece": 13,
    "catorce": 14, "quince": 15, "dieciséis": 16, "diecisiete": 17, "dieciocho": 18,
    "diecinueve": 19, "veinte": 20, "veintiuno": 21, "veintidós": 22, "veintitrés": 23,
    "veinticuatro": 24, "veinticinco": 25, "veintiséis": 26, "veintisiete": 27,
    "veintiocho": 28, "veintinueve": 29, "treinta": 30, "cuarenta": 40, "cincuenta": 50,
    "sesenta": 60, "setenta": 70, "ochenta": 80, "noventa": 90, "cien": 100, "ciento": 100,
    "doscientos": 200, "trescientos": 300, "cuatrocientos": 400, "quinientos": 500,
    "seiscientos": 600, "setecientos": 700, "ochocientos": 800, "novecientos": 900,
}  # fmt: skip
"""Number words by value; a compound is read by adding its parts ("forty five", "fünf und
vierzig", "quarante-cinq", "cuarenta y cinco"), a multiplier below by multiplying."""

_MULTIPLIERS = {
    "dozen": 12, "dutzend": 12, "douzaine": 12, "docena": 12,
    "hundred": 100, "hundert": 100, "cent": 100, "cents": 100,
    "thousand": 1000, "tausend": 1000, "mille": 1000, "mil": 1000,
}  # fmt: skip
_JOINS = frozenset(["and", "und", "et", "y"])
_WEAK = frozenset(
    [
        "one",
        "ein",
        "eine",
        "un",
        "une",
        "uno",
        "una",
        "once",
        "elf",
        "neuf",
        "sept",
        "cent",
        "cents",
    ]
)
"""Number words that are mostly something else (an article, "once", "elf", "neuf", "Sept",
"cent"): read alone only beside a unit or a time of day."""

_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
    "nineteenth": 19, "twentieth": 20, "thirtieth": 30,
}  # fmt: skip
"""English ordinals, read as a date's day beside a month ("the twentieth of March")."""

_ALL = sorted([*_UNITS, *_MULTIPLIERS, "und"], key=len, reverse=True)
_GLUED = re.compile(rf"(?:{'|'.join(_ALL)})+")
"""A German compound written as one word ("fünfundvierzig", "vierzehnhundertfünfzig")."""
_TOKEN = re.compile(r"[^\W\d_]+", re.IGNORECASE)


def _parts(word: str) -> list[str] | None:
    """A word as number words (a German compound split into its parts), or None."""
    if word in _UNITS or word in _MULTIPLIERS or word in _JOINS:
        return [word]
    if not _GLUED.fullmatch(word):
        return None
    found, rest = [], word
    while rest:
        part = next((p for p in _ALL if rest.startswith(p)), None)
        if part is None:
            return None
        found.append(part)
        rest = rest[len(part) :]
    return found


def _follows(last: str | None, word: str) -> bool:
    """Whether `word` may continue a number whose last word is `last`: after a join or a
    multiplier, a unit after a round ten ("forty five"), ten to nineteen after sixty or
    eighty ("soixante-dix"), below a hundred after round hundreds ("cuatrocientos
    cincuenta"); "six one" is two numbers."""
    if last is None or last in _JOINS or last in _MULTIPLIERS or word in _MULTIPLIERS:
        return True
    if word in _JOINS:
        return True
    before, value = _UNITS[last], _UNITS[word]
    if before >= 20 and before % 10 == 0 and value < 10:
        return True
    if before in (60, 80) and 10 <= value < 20:
        return True
    if before == 10 and 7 <= value <= 9:  # dix-sept, dix-huit, dix-neuf
        return True
    return before >= 100 and before % 100 == 0 and value < 100


def number_value(words: list[str]) -> int | None:
    """The value of a run of number words, or None where it holds none or is no one
    number."""
    total, current, seen, last = 0, 0, False, None
    for word in words:
        if not _follows(last, word):
            return None
        last = word
        if word in _JOINS:
            continue
        if word in _MULTIPLIERS:
            current = (current or 1) * _MULTIPLIERS[word]
            if _MULTIPLIERS[word] >= 1000:
                total, current = total + current, 0
        else:
            current += _UNITS[word]
        seen = True
    return total + current if seen else None


_TIMED_BEFORE = re.compile(r"\blas\s+$", re.IGNORECASE)
_TIMED_AFTER = re.compile(
    r"\s+(?:o'clock|uhr|heures?|horas?|hours?|minut\w*|stunden?|pm|am|p\.m\.|a\.m\.)\b",
    re.IGNORECASE,
)


def _timed(text: str, start: int, end: int) -> bool:
    """Whether a weak number word stands as a time or a duration ("a las once", "one hour")."""
    return bool(_TIMED_BEFORE.search(text[:start]) or _TIMED_AFTER.match(text, end))


def _digits(text: str) -> str:
    """Runs of number words as digits ("forty-five" 45, "mil cuatrocientos cincuenta" 1450);
    a weak word alone is kept as written."""
    text = re.sub(r"\bquatre-vingts?\b", "octante", text, flags=re.IGNORECASE)
    tokens = [(m.start(), m.end(), _parts(m.group().lower())) for m in _TOKEN.finditer(text)]
    out, last, i = [], 0, 0
    while i < len(tokens):
        start, end, parts = tokens[i]
        if not parts or parts[0] in _JOINS:
            i += 1
            continue
        words, j = list(parts), i + 1
        while (
            j < len(tokens)
            and tokens[j][2]
            and re.fullmatch(r"[\s-]*", text[end : tokens[j][0]])
            and number_value([*words, *(tokens[j][2] or [])]) is not None
        ):
            words += tokens[j][2] or []
            end, j = tokens[j][1], j + 1
        while words[-1] in _JOINS:  # "forty and": the join belongs to the text after
            words.pop()
            j -= 1
            end = tokens[j - 1][1]
        weak = len(words) == 1 and words[0] in _WEAK
        if (weak and not _timed(text, start, end)) or number_value(words) is None:
            i = j
            continue
        out += [text[last:start], str(number_value(words))]
        last, i = end, j
    return "".join([*out, text[last:]])


_N = r"(\d{1,2})"
_PM = (
    r"(?:in the (?:afternoon|evening)|at night|abends|nachmittags|de l'après-midi|du soir"
    r"|de la tarde|de la noche)"
)
_AM = r"(?:in the morning|morgens|vormittags|du matin|de la mañana)"
_HOUR_WORDS = r"(?:an|one|a|1|ein|eine|une|un|una|uno)"

_PHRASES: tuple[tuple[str, str | Callable[[re.Match[str]], str]], ...] = (
    # Durations: fractions of an hour, and an hour and a half.
    (
        r"\b(?:3|three) quarters? of an hour\b|\bdreiviertelstunde\b"
        r"|\b(?:3|trois) quarts d'heure\b|\b(?:3|tres) cuartos de hora\b",
        "0.75 hours",
    ),
    (
        r"\b(?:an? |1 |one )?quarter(?: of an)? hour\b|\bviertelstunde\b"
        r"|\b(?:un |1 )?quart d'heure\b|\b(?:un |1 )?cuarto de hora\b",
        "0.25 hours",
    ),
    (
        r"\bhalf an hour\b|\ba half[- ]hour\b|\bhalf[- ]hour\b|\b(?:eine |1 )?halbe stunde\b"
        r"|\b(?:une |1 )?demi-heure\b|\bmedia hora\b",
        "0.5 hours",
    ),
    (
        r"\b(?:eineinhalb|anderthalb) stunden?\b|\b(?:an|one|1) hour and a half\b"
        r"|\b(?:une|1) heure et demie\b|\b(?:una|1) hora y media\b",
        "1.5 hours",
    ),
    (
        r"\b(\d+) and a half hours\b|\b(\d+) heures et demie\b|\b(\d+) horas y media\b",
        r"\1\2\3.5 hours",
    ),
    (rf"\b{_HOUR_WORDS} (?:hour|stunde|heure|hora)\b", "1 hours"),
    # Times of day.
    (rf"\blas {_N} y media\b", r"\1:30 o'clock"),
    (rf"\blas {_N}\b", r"\1 o'clock"),
    (rf"\bhalf past {_N}(?: o'clock)?\s+{_PM}", r"\1:30pm"),
    (rf"\bhalf past {_N}(?: o'clock)?\s+{_AM}", r"\1:30am"),
    (rf"\bhalf past {_N}(?: o'clock)?", r"\1:30 o'clock"),
    (rf"\bquarter past {_N}", r"\1:15 o'clock"),
    (rf"\bhalf {_N}\s+{_PM}", r"\1:30pm"),  # British "half eight": 8:30
    (rf"\bhalf {_N}(?!\s*(?:hours?|minutes?|\d))", r"\1:30 o'clock"),
    (rf"\bhalb {_N}(?: uhr)?\s+{_PM}", lambda m: f"{int(m.group(1)) - 1}:30pm"),
    (rf"\bhalb {_N}(?: uhr)?", lambda m: f"{int(m.group(1)) - 1}:30 o'clock"),
    (rf"\b{_N}(?::(\d\d))?(?: o'clock| uhr| heures?| horas?)?\s+{_PM}", r"\1:\2pm"),
    (rf"\b{_N}(?::(\d\d))?(?: o'clock| uhr| heures?| horas?)?\s+{_AM}", r"\1:\2am"),
    (rf"\b{_N} uhr(?: (\d\d))?\b", r"\1:\2 uhr"),
    (rf"\b(?:à|vers) {_N} heures?(?: (\d\d))?\b", r"\1:\2 uhr"),
    (rf"\b{_N} horas\b(?! y)", r"\1:00"),
)
"""Phrases in words rewritten (case aside) in a format readings.py reads, in this order."""


def _phrases(text: str) -> str:
    """The phrases of _PHRASES rewritten, and the clock hours they leave read."""
    for pattern, replacement in _PHRASES:
        text = re.sub(pattern, replacement, text, flags=re.IGNORECASE)
    # A time whose minutes were not written: "3:pm" is 3pm, "15: uhr" is 15:00.
    text = re.sub(r"(\d):(?=[ap]m|\s?uhr)", r"\1", text)
    return re.sub(r"\b(\d{1,2})(?::(\d\d))? uhr\b", _uhr, text, flags=re.IGNORECASE)


def _uhr(match: re.Match[str]) -> str:
    """German (and French "à 15 heures") clock hours: 15 Uhr is 15:00; 3 Uhr may be 3 or 15."""
    hour, minute = int(match.group(1)), match.group(2) or "00"
    return f"{hour}:{minute}" if hour > 12 else f"{hour}:{minute} o'clock"


def _day(match: re.Match[str]) -> str:
    """An ordinal's number: "twenty-first" is 21."""
    tens = {"twenty": 20, "thirty": 30}.get((match.group("tens") or "").lower(), 0)
    return f"{tens + _ORDINALS[match.group('ord').lower()]}"


_ORDINAL = (
    r"(?:(?P<tens>twenty|thirty)[- ])?"
    rf"(?P<ord>{'|'.join(sorted(_ORDINALS, key=len, reverse=True))})\b"
)
_ENGLISH_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b"
)
_BEFORE_MONTH = re.compile(rf"\b{_ORDINAL}(?=\s+of\s+{_ENGLISH_MONTH})", re.IGNORECASE)
_AFTER_MONTH = re.compile(rf"\b({_ENGLISH_MONTH})\s+(?:the\s+)?{_ORDINAL}", re.IGNORECASE)
"""An ordinal in words beside a month ("the twentieth of March", "March the twentieth"), read
as the day's number."""


def in_digits(text: str) -> str:
    """`text` with its numbers, durations, times and date days in words written as digits, in
    forms the fact check reads by value."""
    text = _BEFORE_MONTH.sub(_day, text)
    text = _AFTER_MONTH.sub(lambda m: f"{m.group(1)} {_day(m)}", text)
    return _phrases(_digits(text))
