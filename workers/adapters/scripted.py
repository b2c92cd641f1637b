"""A deterministic model for tests: it replays a script of replies, one per turn.

Script items: `{"call": {"name": …, "arguments": {…}}}`, `{"answer": "…"}` or `{"text": "…"}`
(raw text, decoded like any model's text). Calls are emitted in the prompt's mode: structured in
native mode, as JSON text in the text modes, so the real decoder is exercised.
"""

from __future__ import annotations

import json
from typing import Any

from schema import Message, ModelTarget, PromptConfig, TokenCounts
from workers.errors import AdapterError
from workers.render import decode_text_reply
from workers.toolspec import ModelReply, ParsedCall, ToolSpec


class ScriptedClient:
    def __init__(self, target: ModelTarget) -> None:
        if target.script is None:
            raise AdapterError(f"model {target.id!r}: the scripted adapter needs `script`")
        self.script: list[dict[str, Any]] = target.script
        self.pins = {"adapter": "scripted"}

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec], prompt: PromptConfig, seed: int
    ) -> ModelReply:
        turn = sum(1 for m in messages if m.role == "assistant") - len(prompt.few_shot)
        if turn >= len(self.script):
            return ModelReply(text="", tokens=TokenCounts())
        item = self.script[turn]
        tokens = TokenCounts(prompt=sum(len(m.content.split()) for m in messages), completion=8)
        if not {"call", "answer", "text"} & set(item):
            raise AdapterError(f"scripted reply {turn} has none of call/answer/text: {item}")
        if prompt.mode != "native":
            # Text modes: say it as the model would, and let the real decoder read it.
            reply = decode_text_reply(_as_text(item), turn)
        elif "text" in item or "answer" in item:
            reply = ModelReply(text=str(item.get("text", item.get("answer"))))
        else:
            call = item["call"]
            reply = ModelReply(
                calls=[ParsedCall(f"call_{turn}_0", call["name"], call["arguments"])]
            )
        reply.tokens = tokens
        return reply


def _as_text(item: dict[str, Any]) -> str:
    if "text" in item:
        return str(item["text"])
    if "answer" in item:
        return json.dumps({"answer": item["answer"]})
    return json.dumps({"tool": item["call"]["name"], "arguments": item["call"]["arguments"]})
