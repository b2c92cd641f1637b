"""Whether a simulated user's message plays the user at all (`off_script`): a model too small
to follow the guideline echoes its own instructions, or talks past the agent's question.
Deterministic, like the fact checks beside it: the same message is judged the same way in
every trial, by no model (docs/simulated-user.md, "Whose fault")."""

from __future__ import annotations

import re

from mcp_farm.schema import UserCard
from mcp_farm.workers.usersim.facts import facts_in, volunteered

ECHO_WORDS = 6
"""Consecutive words of the guideline or the card's own wording that make a message an echo
of its instructions: longer than any phrase a user would share with them by chance."""

EMPTY = "(empty message)"
"""What an `off_script` error records of a message with no text and no stop marker."""

_WORD = re.compile(r"[a-z0-9']+")
_DONT_KNOW = re.compile(
    r"\b(?:i\s+(?:do\s*n[o']t|don't|dont)\s+know|not\s+sure|no\s+idea|i\s+can't\s+remember"
    r"|i\s+(?:do\s*n[o']t|don't)\s+remember)\b",
    re.IGNORECASE,
)
_YES_NO = re.compile(
    r"^\W*(?:yes|yeah|yep|no|nope|correct|right|sure|ok(?:ay)?|that's right|exactly)\b",
    re.IGNORECASE,
)
_QUIET = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "to",
        "for",
        "and",
        "or",
        "in",
        "on",
        "at",
        "is",
        "it",
        "my",
        "your",
        "what",
        "which",
        "when",
        "how",
        "do",
        "does",
        "you",
        "i",
    ]
)
"""Words too common to tell which fact a question is about."""


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _shingles(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + ECHO_WORDS]) for i in range(len(words) - ECHO_WORDS + 1)}


def instructions_of(system_prompt: str, card: UserCard) -> list[str]:
    """The user model's instructions in its own wording: the system prompt cut at the card's
    user-facing texts (the opening, the reason, `satisfied_when`, the facts' values), which a
    user may fairly restate in its own words, so only the guideline and the card's labels
    remain."""
    cuts = [card.opening, card.reason, card.satisfied_when, *card.values(), *card.unknown]
    pattern = "|".join(re.escape(c) for c in sorted(cuts, key=len, reverse=True) if c)
    return re.split(pattern, system_prompt) if pattern else [system_prompt]


def echoed(message: str, instructions: list[str]) -> str | None:
    """The first run of ECHO_WORDS words the message shares with a piece of its instructions."""
    words = _words(message)
    theirs = set().union(*(_shingles(_words(part)) for part in instructions))
    for i in range(len(words) - ECHO_WORDS + 1):
        if tuple(words[i : i + ECHO_WORDS]) in theirs:
            return " ".join(words[i : i + ECHO_WORDS])
    return None


def asked_facts(reply: str, card: UserCard) -> list[str]:
    """The card's facts (names from `known`, `on_request` and `unknown`) that a question in the
    agent's reply names: a sentence with a question mark holding a telling word of the name."""
    questions = [s for s in re.split(r"(?<=[.!?])\s+", reply) if "?" in s]
    asked = set().union(*(_words(q) for q in questions)) if questions else set()
    names = [*card.known, *card.on_request, *card.unknown]
    return [n for n in names if any(w in asked for w in _words(n) if w not in _QUIET)]


def unanswered(message: str, reply: str, card: UserCard) -> list[str]:
    """The card facts the agent's reply asked for, when the message answers none of them: it
    states no value of the card nor any other fact-shaped piece (a wrong value is an answer,
    judged as `invented`), does not say it does not know, nor answers yes or no."""
    asked = asked_facts(reply, card)
    if not asked or _DONT_KNOW.search(message) or _YES_NO.match(message):
        return []
    if facts_in(message) or volunteered(message, card.values(), []):
        return []
    return asked


def off_script(
    message: str, system_prompt: str, reply: str, card: UserCard, *, parting: bool = False
) -> list[str]:
    """Why `message` does not play the user, as the pieces to record (empty: it does): empty,
    an echo of its instructions (the guideline and the card's labels in the user model's
    `system_prompt`), or no answer to the agent's question for a card fact (`reply`: the
    agent's reply it answers). A `parting` message (sent with the stop marker) is not held to
    answer the question: leaving at the agent's question is judged once, as `left_early`."""
    if not message.strip():
        return [EMPTY]
    echo = echoed(message, instructions_of(system_prompt, card))
    if echo is not None:
        return [f"repeats its instructions: {echo!r}"]
    if parting:
        return []
    missed = unanswered(message, reply, card)
    if missed:
        return [f"answers no question asked (about {', '.join(missed)})"]
    return []
