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
    r"\b(?:(?:do|did)\s*n[o']?t|don't|dont|never)\s+(?:\w+\s+)?(?:know|remember|recall|have)\b"
    r"|\b(?:no|not\s+a|haven't\s+(?:got\s+)?a|have\s+no|'ve\s+no)\s+(?:\w+\s+)?(?:idea|clue)\b"
    r"|\bnot\s+(?:\w+\s+)?(?:sure|certain)\b|\bunsure\b|\bdunno\b|\bbeats\s+me\b"
    r"|\b(?:unfortunately|sadly|afraid|leider|malheureusement|lamentablemente)"
    r"\s+(?:not|no|nicht|pas)\b"
    r"|\b(?:can't|cannot|can\s+not|couldn't)\s+(?:remember|recall|say|tell)\b"
    r"|\bforg[oe]t(?:ten)?\b|\bno\s+way\s+(?:of|to)\s+know"
    # German, French, Spanish
    r"|\bwei(?:ß|ss)\s+(?:ich\s+)?(?:\w+\s+)?nicht\b|\bkeine\s+ahnung\b|\bnicht\s+sicher\b"
    r"|\bje\s+(?:ne\s+)?(?:sais|connais)\s+pas\b|\baucune\s+idée\b|\bpas\s+sûre?\b"
    r"|\bno\s+(?:lo\s+)?(?:sé|se|recuerdo|conozco)\b|\bni\s+idea\b|\bno\s+estoy\s+segur[oa]\b",
    re.IGNORECASE,
)
"""Ways to say "I don't know" (English, German, French, Spanish): an answer to a question
for a fact the user does not have."""
_YES_NO = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|no|nope|nah|correct|right|sure|ok(?:ay)?|that's right|exactly"
    r"|absolutely|of course|go ahead|sounds good|perfect|great|fine|that works"
    r"|ja|jawohl|genau|nein|oui|non|d'accord|sí|si|vale|claro|exacto)\b",
    re.IGNORECASE,
)
_SPEAKER = re.compile(
    r"(?:^|[\n.!?])\s*(?:assistant|ai|agent|bot|system)\s*:|\bas\s+an\s+ai\b|\blanguage\s+model\b",
    re.IGNORECASE,
)
"""A line the user model wrote as another speaker (the assistant's part), or as the model it is."""
_ASSISTANT = re.compile(
    r"\bhow\s+(?:can|may)\s+i\s+(?:help|assist)\b|\banything\s+else\s+i\s+can\b"
    r"|\bif\s+you\s+need\s+anything\s+else\b|\blet\s+me\s+know\s+if\s+you\s+(?:need|have|want)\b"
    r"|\b(?:i(?:'ve|\s+have|'ll|\s+will|'m\s+going\s+to|\s+am\s+going\s+to)|let\s+me)\s+"
    r"(?:\w+\s+){0,3}?(?:add|create|schedul|send|sent|set|book|cancel|updat|mark|put|repl"
    r"|email|check|look|remind|draft|tick)\w*\b[^.!?\n]*\byour\b",
    re.IGNORECASE,
)
"""The assistant's way of speaking: offering help, or doing something to "your" things."""
_TOOL_CALL = re.compile(r"\b[a-z]+(?:_[a-z]+)+\s*\(|\"(?:name|tool|arguments)\"\s*:")
"""A tool call written out (`create_event(...)`, `{"name": …}`): the user has no tools."""
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


def plays_assistant(message: str) -> str | None:
    """How the message writes the assistant's part or a tool call, if it does."""
    if _SPEAKER.search(message):
        return "writes the assistant's part"
    if _TOOL_CALL.search(message):
        return "writes a tool call"
    if _ASSISTANT.search(message):
        return "speaks as the assistant"
    return None


_WHAT_FOR = re.compile(
    r"\bhow\s+(?:can|may)\s+i\s+help\b|\bwhat\s+can\s+i\s+do\s+for\s+you\b"
    r"|\bwhat\s+do\s+you\s+need\b|\bwhat\s+would\s+you\s+like\s+me\s+to\s+do\b",
    re.IGNORECASE,
)
"""An agent's question what the user wants at all: saying the opening again answers it."""


def restates_opening(message: str, reply: str, card: UserCard) -> bool:
    """Whether the message, in answer to a question (other than what the user wants at all),
    only says its opening again: at least 3 telling words, 80% of them the opening's."""
    if "?" not in reply or _WHAT_FOR.search(reply):
        return False
    words = [w for w in _words(message) if w not in _QUIET]
    opening = set(_words(card.opening))
    return len(words) >= 3 and sum(w in opening for w in words) >= 0.8 * len(words)


def off_script(
    message: str, system_prompt: str, reply: str, card: UserCard, *, parting: bool = False
) -> list[str]:
    """Why `message` does not play the user, as the pieces to record (empty: it does): empty,
    an echo of its instructions (the guideline and the card's labels in the user model's
    `system_prompt`), the assistant's part or a tool call, its opening said again in answer to
    a question, or no answer to the agent's question for a card fact (`reply`: the agent's
    reply it answers). A `parting` message (sent with the stop marker) is not held to answer
    the question: leaving at the agent's question is judged once, as `left_early`."""
    if not message.strip():
        return [EMPTY]
    echo = echoed(message, instructions_of(system_prompt, card))
    if echo is not None:
        return [f"repeats its instructions: {echo!r}"]
    astray = plays_assistant(message)
    if astray is not None:
        return [astray]
    if parting:
        return []
    if restates_opening(message, reply, card):
        return ["answers no question asked (restates its opening)"]
    missed = unanswered(message, reply, card)
    if missed:
        return [f"answers no question asked (about {', '.join(missed)})"]
    return []
