"""A deterministic model for tests: it replays a script of replies, one per model turn.

Script items: `{"call": {"name": …, "arguments": {…}}}`, `{"answer": "…"}` or `{"text": "…"}`
(raw text, decoded like any model's text), each with an optional `think_s` (seconds to wait
first, as a slow or hung model would), or `{"any": [item, …]}`: one of those items, picked by
the call's sampling seed, so a scripted model's seed matters as a sampled model's does (the
variance split of agent repetitions and user seeds is tested and benchmarked with it). Calls are emitted in the prompt's mode: structured in
native mode, as JSON text in the text modes, so the real decoder is exercised.

A script is flat (every reply in order, whatever user turn it answers) or per turn: each item
with `turn: k` (0-based) answers user turn k, its replies in the order written. Per turn, a
user turn cut short (strict counting stops a repeat, a limit ends it) leaves its unused
replies behind, and the next turn still starts at its own first reply; a flat script would
hand it the cut turn's leftovers. Past its replies a turn gets an empty answer, as a flat
script's end does.
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
from mcp_farm.workers.model.encode import user_turn
from mcp_farm.workers.model.safejson import as_json_text
from mcp_farm.workers.model.toolspec import (
    ModelReply,
    ToolSpec,
)


class ScriptedClient:
    def __init__(self, target: ModelTarget) -> None:
        if target.script is None:
            raise AdapterError(f"model {target.id!r}: the scripted adapter needs `script`")
        self.by_turn = per_turn(target.id, target.script)
        """The replies of each user turn (per-turn form); None for a flat script."""
        self.script: list[dict[str, Any]] = target.script
        self.pins = {"adapter": "scripted"}
        self.given: dict[int, int] = {}
        """Replies given so far, by user turn (a flat script counts them all under turn 0).
        Counted here rather than from the history, which shows the expected turn, not the
        model's, after a failed conversation turn under `continue`."""

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec], prompt: PromptConfig, seed: int
    ) -> ModelReply:
        at = 0 if self.by_turn is None else user_turn(messages, prompt)
        script = self.script if self.by_turn is None else self.by_turn.get(at, [])
        turn = self.given.get(at, 0)
        self.given[at] = turn + 1
        if turn >= len(script):
            return ModelReply(text="", tokens=TokenCounts())
        item = _picked(script[turn], seed)
        think_s = item.get("think_s", 0) if isinstance(item, dict) else 0
        if isinstance(think_s, int | float) and think_s > 0:
            await anyio.sleep(think_s)  # a slow machine, or a hung model past its limit
        reply = scripted_reply(item, turn, prompt.mode)
        reply.tokens = TokenCounts(
            prompt=sum(len(m.content.split()) for m in messages), completion=8
        )
        return reply


def per_turn(model: str, script: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]] | None:
    """A per-turn script's replies by user turn, each without its `turn` key; None for a flat
    script. AdapterError when only some items name their turn, or one names no turn number:
    a script half in each form has no one reading."""
    named = [item for item in script if isinstance(item, dict) and "turn" in item]
    if not named:
        return None
    if len(named) < len(script):
        raise AdapterError(
            f"model {model!r}: give `turn` on every script item (replies per user turn) "
            "or on none (replies in order)"
        )
    replies: dict[int, list[dict[str, Any]]] = {}
    for item in named:
        turn = item["turn"]
        if not isinstance(turn, int) or isinstance(turn, bool) or turn < 0:
            raise AdapterError(f"model {model!r}: a script item's `turn` is {turn!r}, not 0, 1, …")
        replies.setdefault(turn, []).append({k: v for k, v in item.items() if k != "turn"})
    return replies


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
