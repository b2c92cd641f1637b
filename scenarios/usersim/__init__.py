"""The simulated user's guideline, a versioned text shipped with the farm, and the system
prompt a user model gets: the guideline and the scenario's card (docs/simulated-user.md)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from mcp_farm.schema import STOP_MARKER, UserCard

GUIDELINE_VERSION = "v1"
"""The guideline every simulated user follows; recorded on each trial. A change to the text
is a new file and a new version, never an edit of a shipped one."""

_HERE = Path(__file__).parent


@cache
def guideline(version: str = GUIDELINE_VERSION) -> str:
    """The guideline's text, as shipped (`guideline_<version>.md`)."""
    return (_HERE / f"guideline_{version}.md").read_text(encoding="utf-8").strip()


def _facts(title: str, facts: dict[str, str | int | float]) -> list[str]:
    if not facts:
        return []
    return [f"{title}:", *(f"- {name}: {value}" for name, value in facts.items())]


def card_text(card: UserCard) -> str:
    """The card as the user model reads it."""
    lines = [
        f"Your reason for this conversation: {card.reason}",
        f"Your first message (already sent): {card.opening}",
        *_facts("Known facts", card.known),
        *_facts("Give only when asked", card.on_request),
        *(["You do not know:", *(f"- {what}" for what in card.unknown)] if card.unknown else []),
        f"Satisfied when: {card.satisfied_when}",
    ]
    return "\n".join(lines)


def user_system_prompt(card: UserCard, version: str = GUIDELINE_VERSION) -> str:
    """What the user model is told: the guideline, then its card."""
    return f"{guideline(version)}\n\n# Your card\n{card_text(card)}\n\nStop marker: {STOP_MARKER}"


def no_user_opening(card: UserCard) -> str:
    """The no-user arm's only message: the opening, then every fact the user knows or would
    give when asked, written out, so nothing needs to be asked."""
    facts = {**card.known, **card.on_request}
    if not facts:
        return card.opening
    lines = [f"- {name}: {value}" for name, value in facts.items()]
    return "\n".join([card.opening, "", "Everything I know that may help:", *lines])


def no_user_card(card: UserCard) -> UserCard:
    """The card of the no-user arm: the opening with every fact, one message and no more
    (no user model is asked; nothing is frozen)."""
    return card.model_copy(
        update={"opening": no_user_opening(card), "max_turns": 1, "frozen": None}
    )


__all__ = [
    "GUIDELINE_VERSION",
    "card_text",
    "guideline",
    "no_user_card",
    "no_user_opening",
    "user_system_prompt",
]
