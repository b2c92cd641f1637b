"""A deterministic model for tests: it replays a script of replies, one per turn.

Script items: `{"call": {"name": …, "arguments": {…}}}`, `{"answer": "…"}` or `{"text": "…"}`
(raw text, decoded like any model's text), each with an optional `think_s` (seconds to wait
first, as a slow or hung model would), or `{"any": [item, …]}`: one of those items, picked by
the call's sampling seed, so a scripted model's seed matters as a sampled model's does (the
variance split of agent repetitions and user seeds is tested and benchmarked with it). Calls are emitted in the prompt's mode: structured in
native mode, as JSON text in the text modes, so the real decoder is exercised.
"""

from __future__ import annotations

import json
import random
from typing import Any

import anyio

from mcp_farm.schema import (
    Message,
    ModelTarget,
    PromptConfig,
    TokenCounts,
)
from mcp_farm.workers.errors import AdapterError
from mcp_farm.workers.model.decode import (
    checked_call,
    decode_arguments,
    decode_text_reply,
)
from mcp_farm.workers.model.safejson import as_json_text
from mcp_farm.workers.model.toolspec import (
    ModelReply,
    ToolSpec,
)


class ScriptedClient:
    def __init__(self, target: ModelTarget) -> None:
        if target.script is None:
            raise AdapterError(f"model {target.id!r}: the scripted adapter needs `script`")
        self.script: list[dict[str, Any]] = target.script
        self.pins = {"adapter": "scripted"}
        self.given = 0
        """Replies given so far: the next is script item `given`. Counted here rather than
        from the history, which shows the expected turn, not the model's, after a failed
        conversation turn under `continue`; a conversation's script is every turn's replies
        in order."""

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec], prompt: PromptConfig, seed: int
    ) -> ModelReply:
        turn = self.given
        self.given += 1
        if turn >= len(self.script):
            return ModelReply(text="", tokens=TokenCounts())
        item = _picked(self.script[turn], seed)
        think_s = item.get("think_s", 0) if isinstance(item, dict) else 0
        if isinstance(think_s, int | float) and think_s > 0:
            await anyio.sleep(think_s)  # a slow machine, or a hung model past its limit
        reply = scripted_reply(item, turn, prompt.mode)
        reply.tokens = TokenCounts(
            prompt=sum(len(m.content.split()) for m in messages), completion=8
        )
        return reply


def _picked(item: Any, seed: int) -> Any:
    """The item itself, or for `{"any": [...]}` the one the seed picks (the same each time)."""
    if isinstance(item, dict) and isinstance(item.get("any"), list) and item["any"]:
        return random.Random(seed).choice(item["any"])
    return item


def scripted_reply(item: dict[str, Any], turn: int, mode: str) -> ModelReply:
    """One script item as the model's turn, decoded like a real model's; never raises.

    A script is test input written by hand, so a malformed item is graded like a model's
    malformed reply (a format error naming the problem), not raised.
    """
    if not {"call", "answer", "text"} & set(item):
        return ModelReply(
            text=as_json_text(item),
            format_error=f"scripted reply {turn} has none of call/answer/text",
        )
    if mode != "native":
        # Text modes: say it as the model would, and let the real decoder read it.
        text = _as_text(item)
        if text is None:
            return ModelReply(
                text=as_json_text(item),
                format_error=f"scripted reply {turn} cannot be written as JSON",
            )
        return decode_text_reply(text, turn)
    if "text" in item or "answer" in item:
        said = item.get("text", item.get("answer"))
        return ModelReply(text=said if isinstance(said, str) else as_json_text(said))
    call = item["call"]
    if not isinstance(call, dict):
        return ModelReply(text=as_json_text(item), format_error="a tool call that is not an object")
    name = call.get("name")
    arguments = decode_arguments(call.get("arguments"), name if isinstance(name, str) else "")
    parsed = checked_call(f"call_{turn}_0", name, arguments)
    if isinstance(parsed, str):
        return ModelReply(text=as_json_text(item), format_error=parsed)
    return ModelReply(calls=[parsed])


def _as_text(item: dict[str, Any]) -> str | None:
    """The item as a text-mode model would write it; None when it has no JSON form."""
    if "text" in item:
        said = item["text"]
        return said if isinstance(said, str) else as_json_text(said)
    try:
        if "answer" in item:
            return json.dumps({"answer": item["answer"]})
        call = item["call"]
        if not isinstance(call, dict):
            return json.dumps(call)
        return json.dumps({"tool": call.get("name"), "arguments": call.get("arguments", {})})
    except (TypeError, ValueError, RecursionError):
        return None
