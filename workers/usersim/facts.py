"""Whether a simulated user's message holds a fact it was never given: every piece of text
shaped like a fact (an e-mail address, a date, a file name, an id, a number) must occur on
its card or in what the agent had said to it; one that does not is the user's invention.

Deterministic on purpose: a user error must be found the same way in every trial, by no
model, so that a failure can be attributed without a judge of its own."""

from __future__ import annotations

import re

SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("date", re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b")),
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
order, so the digits of an id or a date are not checked again as a number."""

DIGITS = re.compile(r"\d+")


def _norm(fact: str) -> str:
    return fact.lower().replace(",", "")


def facts_in(text: str) -> list[str]:
    """The fact-shaped pieces of a message, in the order of SHAPES, each once."""
    found: list[str] = []
    rest = text
    for _shape, pattern in SHAPES:
        for match in pattern.finditer(rest):
            if match.group() not in found:
                found.append(match.group())
        rest = pattern.sub(" ", rest)
    return found


def _known(texts: list[str]) -> tuple[set[str], str]:
    """What the given texts hold: every fact of every shape (without taking the text apart,
    so an id's digits are known as a number too) and every run of digits; and the texts
    themselves, lower-cased, for facts found as part of a longer word."""
    joined = "\n".join(texts)
    known = {_norm(m.group()) for _s, p in SHAPES for m in p.finditer(joined)}
    known |= {m.group() for m in DIGITS.finditer(joined)}
    return known, joined.lower()


def invented(message: str, allowed: list[str]) -> list[str]:
    """The facts of `message` that occur in none of the `allowed` texts (the card's own and
    the agent's replies so far). A number must be one of theirs exactly ("3" is not in
    "2023"); a longer fact may also occur inside their text."""
    known, joined = _known(allowed)
    wrong: list[str] = []
    for fact in facts_in(message):
        norm = _norm(fact)
        if norm in known:
            continue
        if not DIGITS.fullmatch(norm.replace(".", "").replace(":", "")) and norm in joined:
            continue
        wrong.append(fact)
    return wrong
