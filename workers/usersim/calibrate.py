"""The simulated user's calibration: before a sweep meets a user model, a few canned agent
questions against a fixed card, each answered by the model and checked as a trial checks a
user message. A model that does not play the user (it echoes its instructions, talks past
the question, invents a fact) is refused before any trial runs (docs/simulated-user.md)."""

from __future__ import annotations

from typing import Any

import anyio

from mcp_farm.scenarios.usersim import GUIDELINE_VERSION, user_system_prompt
from mcp_farm.schema import (
    STOP_MARKER,
    GenerationParams,
    Message,
    PromptConfig,
    Settings,
    UserCard,
    UserModel,
)
from mcp_farm.schema.tasks.messages import (
    CalibrationReply,
    UserCalibrationRequest,
    UserCalibrationResult,
    read_message,
)
from mcp_farm.workers.model.adapters import make_client
from mcp_farm.workers.model.base import ModelClient
from mcp_farm.workers.usersim.check import check_message
from mcp_farm.workers.usersim.loop import SPEAKER, visible_text

CARD = UserCard(
    opening="Please put my dentist appointment on my calendar for Thursday 2026-03-12.",
    reason="You booked a dentist appointment with Dr Okafor and want it in your calendar.",
    known={"dentist": "Dr Okafor"},
    on_request={"start time": "15:00", "length": "45 minutes"},
    unknown=["the dentist's address"],
    satisfied_when="the assistant says the appointment is on the calendar on 12 March at 15:00",
)
"""The calibration's card: the bundled suite's dentist card, fixed here so that every user
model is measured against the same one."""

QUESTIONS = (
    "Sure, I can add it. What start time should I use?",
    "Thanks. And how long is it: what length should the event have?",
    "Do you know the dentist's address, so I can put it on the event?",
)
"""Canned agent replies, each asking for one card fact (two the card gives when asked, one it
does not know)."""


async def _answer(client: ModelClient, user: UserModel, system: str, question: str) -> str:
    said = [("user", CARD.opening), ("agent", question)]
    messages = [
        Message(role="system", content=system),
        Message(role="user", content=visible_text(said)),
    ]
    prompt = PromptConfig(
        id="simulated-user",
        version=1,
        mode="native",
        system_prompt=system,
        generation=GenerationParams(temperature=user.temperature, max_tokens=user.max_tokens),
    )
    reply = await client.complete(messages, [], prompt, user.seed)
    return SPEAKER.sub("", reply.text.split(STOP_MARKER)[0]).strip()


def check_reply(question: str, reply: str) -> list[str]:
    """The user errors a calibration reply would be in a trial: the trial's own check
    (`check_message`), so that the calibration refuses no model its trials would pass."""
    said = [("user", CARD.opening), ("agent", question)]
    errors = check_message(CARD, said, reply, 1)
    return [f"{e.kind}: {fact}" for e in errors for fact in e.facts]


async def calibrate(client: ModelClient, user: UserModel) -> UserCalibrationResult:
    """Ask every canned question of the user model and check each reply."""
    system = user_system_prompt(CARD, GUIDELINE_VERSION)
    replies = []
    for question in QUESTIONS:
        reply = await _answer(client, user, system, question)
        replies.append(
            CalibrationReply(question=question, reply=reply, problems=check_reply(question, reply))
        )
    return UserCalibrationResult(model_id=user.model.id, replies=replies)


def calibrate_user(
    payload: UserCalibrationRequest | dict[str, Any], settings: Settings, **_options: Any
) -> UserCalibrationResult:
    """Task `farm.calibrate_user`. It runs its own event loop: call it outside one (the CLI)."""
    request = read_message("farm.calibrate_user", payload, UserCalibrationRequest)
    client = make_client(request.user.model, settings.model_cache_dir, settings.local_threads)
    return anyio.run(calibrate, client, request.user)
