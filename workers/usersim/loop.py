"""A conversation with a simulated user: the card's opening, the agent's part (the same reply
loop as any request), the user model's next message from what it can see, and so on until the
user writes the stop marker, the agent's part ends otherwise than with a reply, or the card's
turn limit (docs/simulated-user.md)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import anyio
from mcp import MCPError

from mcp_farm.scenarios.usersim import GUIDELINE_VERSION, user_system_prompt
from mcp_farm.schema import (
    STOP_MARKER,
    GenerationParams,
    Message,
    PromptConfig,
    Scenario,
    SetupCall,
    UserCard,
    UserIdentity,
    UserModel,
    UserSimRecord,
    digest,
)
from mcp_farm.workers.clock import clock_stopped
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.connections import Connected, reselect
from mcp_farm.workers.model.base import ModelClient
from mcp_farm.workers.model.encode import opening_messages
from mcp_farm.workers.session import (
    SessionState,
    recorded,
    reply_loop,
    setup_owner,
    show_tools,
)
from mcp_farm.workers.usersim.cache import TurnCache, turn_key
from mcp_farm.workers.usersim.check import check_message

SPEAKER = re.compile(r"^\s*(?:user|you|me)\s*:\s*", re.IGNORECASE)
"""A speaker label a small model may put before its message, taken off."""


@dataclass
class UserSide:
    """The simulated user of one trial: its model, its prompt and what it records. A frozen
    user (the card's `frozen` messages) and the no-user arm have no model."""

    client: ModelClient | None
    settings: UserModel | None
    card: UserCard
    record: UserSimRecord
    cache: TurnCache | None = None
    """Where user turns are kept; None: every turn is asked of the model."""

    @property
    def prompt(self) -> PromptConfig:
        """The user model's prompt: the guideline and the card, plain text out (no tools)."""
        assert self.settings is not None, "a user without a model has no prompt"
        return PromptConfig(
            id="simulated-user",
            version=1,
            mode="native",
            system_prompt=user_system_prompt(self.card, self.record.identity.guideline),
            generation=GenerationParams(
                temperature=self.settings.temperature, max_tokens=self.settings.max_tokens
            ),
        )


def user_side(
    client: ModelClient,
    settings: UserModel,
    card: UserCard,
    repetition: int,
    cache: TurnCache | None = None,
) -> UserSide:
    """The user of a trial, with its identity recorded before anything runs. The cache is
    used at temperature 0 only: above it the user's replies are meant to vary (by seed), and
    a cached one would hide the very variance a sweep with user seeds measures."""
    identity = UserIdentity(
        model_id=settings.model.id,
        model_key=settings.model.key(),
        pins=dict(client.pins),
        temperature=settings.temperature,
        seed=settings.seed + repetition,
        guideline=GUIDELINE_VERSION,
        max_tokens=settings.max_tokens,
    )
    cache = cache if settings.temperature == 0 else None
    return UserSide(client, settings, card, UserSimRecord(identity=identity), cache)


FROZEN = "frozen"
"""The model id a frozen user is recorded under (its key: the digest of its messages)."""
NO_USER = "no-user"
"""The model id the no-user arm's trials record as their user (there is none)."""


def modelless_side(card: UserCard, repetition: int) -> UserSide:
    """The user of a trial that asks no model: a frozen user replays the card's `frozen`
    messages; a card without them (the no-user arm) never gets a second message."""
    frozen = card.frozen is not None
    identity = UserIdentity(
        model_id=FROZEN if frozen else NO_USER,
        model_key=digest(card.frozen)[:16] if frozen else "",
        temperature=0.0,
        seed=repetition,
        guideline=GUIDELINE_VERSION,
    )
    return UserSide(None, None, card, UserSimRecord(identity=identity))


def visible_text(said: list[tuple[str, str]]) -> str:
    """The conversation as the user sees it: its own messages and the agent's replies to it,
    never a tool call, a tool result or the agent's system prompt."""
    lines = [f"{'You' if who == 'user' else 'Assistant'}: {text}" for who, text in said]
    return (
        "The conversation so far:\n\n"
        + "\n\n".join(lines)
        + "\n\nWrite your next message as the user (only the message)."
    )


@contextmanager
def user_time(record: UserSimRecord) -> Iterator[None]:
    """Count the block's seconds as the user's: the trial takes them out of the agent's
    latency."""
    started = time.perf_counter()
    try:
        yield
    finally:
        record.seconds += time.perf_counter() - started


async def user_reply(user: UserSide, said: list[tuple[str, str]], state: SessionState) -> str:
    """The user's next message: a frozen user's next recorded one, a cached one, or the user
    model's (its tokens counted on the user's record, never a cached turn's). The model's
    reply and the cache's reads and writes are the user's time, never the agent's."""
    if user.card.frozen is not None:
        sent = user.record.messages - 1  # the opening is not among the frozen messages
        # A recording that has run out is the recorded user's stop, never an empty message.
        return user.card.frozen[sent] if sent < len(user.card.frozen) else STOP_MARKER
    assert user.client is not None and user.settings is not None
    system, visible = user.prompt.system_prompt, visible_text(said)
    key = turn_key(user.record.identity, user.settings, system, visible)
    if user.cache is not None:
        with clock_stopped(state.clock), user_time(user.record):
            hit = await user.cache.get(key)
        if hit is not None:
            user.record.cached += 1
            return SPEAKER.sub("", hit).strip()
    messages = [Message(role="system", content=system), Message(role="user", content=visible)]
    target = user.settings.model
    limit = target.reply_limit_s if target.reply_clock == "wall" else None
    seed = user.record.identity.seed * 1000 + user.record.messages
    with clock_stopped(state.clock), user_time(user.record), anyio.move_on_after(limit) as waited:
        reply = await user.client.complete(messages, [], user.prompt, seed)
    if waited.cancelled_caught or reply.stop is not None:
        raise InfraError(f"the simulated user ({target.id}) gave no reply: {reply.text or limit}")
    user.record.tokens = user.record.tokens.add(reply.tokens)
    if user.cache is not None:
        with clock_stopped(state.clock), user_time(user.record):
            await user.cache.put(key, reply.text, target.id)
    return SPEAKER.sub("", reply.text).strip()


def _still_expected(scenario: Scenario, state: SessionState) -> list[str]:
    """What a simulated user's next message should lead to, for its selection recall: the
    scenario's expected tools the agent has not called yet (a simulated user's messages carry
    no expectations of their own; the goal is the whole scenario's)."""
    made = {call.tool for call in state.calls}
    return [tool for tool in scenario.expected_tools if tool not in made]


async def run_simulated(
    state: SessionState,
    scenario: Scenario,
    prompt: PromptConfig,
    client: ModelClient,
    conn: Connected,
    seed: int,
    reply_limit_s: float | None,
    user: UserSide,
) -> None:
    """Talk until the user stops, the agent's part ends without a reply, or the card's turn
    limit; the model's history is the stored transcript, with the user's messages in it."""
    await reselect(conn, user.card.opening, _still_expected(scenario, state))
    tools = list(conn.tools.values())
    state.transcript = opening_messages(prompt, user.card.opening, tools, conn.instructions)
    said: list[tuple[str, str]] = [("user", user.card.opening)]
    record = user.record
    for i in range(user.card.max_turns):
        if i:
            text = await user_reply(user, said, state)
            stop = STOP_MARKER in text
            text = text.split(STOP_MARKER)[0].strip()
            if text or not stop:
                # An empty reply without the stop marker is checked too: the user model wrote
                # nothing at all (`off_script`), and the conversation ends there.
                version = record.identity.guideline
                record.errors += check_message(
                    user.card, said, text, i, parting=stop, guideline=version
                )
            if text:
                state.transcript.append(Message(role="user", content=text))
                said.append(("user", text))
            if stop or not text:
                # A parting message is kept in the transcript; the agent is not asked again.
                record.ended = "user_stop"
                return
            record.messages += 1
            # Selection runs on each message the user writes, as on a scripted turn's.
            if await reselect(conn, text, _still_expected(scenario, state)):
                show_tools(state, state.transcript, prompt, conn)
        record.first_calls.append(len(state.calls))
        state.stop_reason, state.final_answer, state.format_error = None, None, None
        await reply_loop(
            state, state.transcript, scenario, prompt, client, conn, seed, reply_limit_s
        )
        if state.stop_reason != "answer":
            record.ended = "agent_stop"
            return
        said.append(("agent", state.final_answer or ""))
    record.ended = "max_turns"


async def read_final_state(scenario: Scenario, conn: Connected, record: UserSimRecord) -> None:
    """Make the scenario's `final_state` read calls, recorded on the user's record; a call the
    server refuses over the protocol is the farm's trouble (InfraError), not the agent's."""
    for k, check in enumerate(scenario.final_state):
        call = SetupCall(server=check.server, tool=check.tool, arguments=check.arguments)
        server = setup_owner(call, conn)
        started = time.perf_counter()
        try:
            result = await conn.call(server, call.tool, call.arguments)
        except MCPError as exc:
            raise InfraError(f"final_state[{k}] {server}.{call.tool} failed: {exc}") from None
        record.state_calls.append(
            recorded(
                k, server, call.tool, call.arguments, result, time.perf_counter() - started, conn
            )
        )
