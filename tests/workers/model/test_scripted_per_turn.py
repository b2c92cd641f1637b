"""The scripted model's two script forms: flat (replies in order) and per turn (`turn: k`),
read by the user turn the history ends in; a script half in each form is refused."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import load_prompt
from mcp_farm.schema import Message
from mcp_farm.workers.errors import AdapterError
from mcp_farm.workers.model.scripted import ScriptedClient
from tests.helpers import scripted

PROMPT = load_prompt("native")


def _history(users: int) -> list[Message]:
    """An opening and `users` user messages, each but the last answered."""
    messages = [Message(role="system", content="s")]
    for k in range(users):
        messages.append(Message(role="user", content=f"u{k}"))
        if k < users - 1:
            messages.append(Message(role="assistant", content=f"a{k}"))
    return messages


def _said(client: ScriptedClient, users: int) -> str:
    async def ask() -> str:
        return (await client.complete(_history(users), [], PROMPT, 0)).text

    return anyio.run(ask)


def test_a_per_turn_script_answers_each_user_turn_from_its_own_replies() -> None:
    script: list[dict[str, Any]] = [
        {"turn": 0, "answer": "first, 1"},
        {"turn": 0, "answer": "first, 2 (never asked for)"},
        {"turn": 1, "answer": "second, 1"},
    ]
    client = ScriptedClient(scripted(script))
    assert [_said(client, 1), _said(client, 2), _said(client, 2)] == ["first, 1", "second, 1", ""]


def test_a_flat_script_gives_its_replies_in_order_whatever_the_turn() -> None:
    client = ScriptedClient(scripted([{"answer": "one"}, {"answer": "two"}]))
    assert [_said(client, 1), _said(client, 2)] == ["one", "two"]


@pytest.mark.parametrize(
    "script",
    [
        [{"turn": 0, "answer": "a"}, {"answer": "b"}],
        [{"turn": -1, "answer": "a"}],
        [{"turn": "one", "answer": "a"}],
    ],
)
def test_a_script_with_turns_on_some_items_or_a_bad_turn_is_refused(
    script: list[dict[str, Any]],
) -> None:
    with pytest.raises(AdapterError, match="turn"):
        ScriptedClient(scripted(script))
