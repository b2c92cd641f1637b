"""The check of one simulated user's message, as a trial makes it when the message arrives and
as the calibration makes it of a user model's canned replies: the same function for both, so a
model the calibration passes is judged the same way in its trials (docs/simulated-user.md,
"Whose fault")."""

from __future__ import annotations

from mcp_farm.scenarios.usersim import GUIDELINE_VERSION, user_system_prompt
from mcp_farm.schema import UserCard, UserError
from mcp_farm.workers.usersim.facts import invented, volunteered
from mcp_farm.workers.usersim.script import off_script

Said = list[tuple[str, str]]
"""The conversation as the user sees it: (`user` or `agent`, text), the opening first."""


def check_message(
    card: UserCard,
    said: Said,
    text: str,
    index: int,
    *,
    parting: bool = False,
    guideline: str = GUIDELINE_VERSION,
) -> list[UserError]:
    """The user errors of message `index` (`text`, the stop marker taken off) after the
    conversation `said`: a fact neither on the card nor in what the agent had said to it
    (`invented`); a fact the card keeps for when it is asked while the agent's reply before it
    asked nothing (`volunteered`); no playing of the user at all (`off_script`: empty, an echo
    of its instructions, the assistant's part, or no answer to the agent's question for a card
    fact). A `parting` message (sent with the stop marker) is not held to answer the question:
    a stop at the agent's question is one error, `left_early`, found when the trial is graded."""
    errors = []
    system = user_system_prompt(card, guideline)
    astray = off_script(text, system, said[-1][1], card, parting=parting)
    if astray:
        errors.append(UserError(message=index, kind="off_script", facts=astray, said=text))
    allowed = [card.opening, card.reason, card.satisfied_when, *card.values()]
    allowed += [reply for who, reply in said if who == "agent"]
    wrong = invented(text, allowed)
    if wrong:
        errors.append(UserError(message=index, facts=wrong, said=text))
    if "?" in said[-1][1]:
        return errors
    # What the agent already has: the conversation so far and the facts the user may mention.
    given = [str(v) for v in card.known.values()] + [t for _who, t in said]
    unasked = volunteered(text, [str(v) for v in card.on_request.values()], given)
    if unasked:
        errors.append(UserError(message=index, kind="volunteered", facts=unasked, said=text))
    return errors
