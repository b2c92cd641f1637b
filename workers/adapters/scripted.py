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
        if "text" in item:
            reply = (
                decode_text_reply(item["text"], turn)
                if prompt.mode != "native"
                else (ModelReply(text=item["text"]))
            )
        elif "answer" in item:
            text = item["answer"]
            reply = ModelReply(
                text=text if prompt.mode == "native" else json.dumps({"answer": text})
            )
            if prompt.mode != "native":
                reply = decode_text_reply(reply.text, turn)
        elif "call" in item:
            call = item["call"]
            if prompt.mode == "native":
                reply = ModelReply(
                    calls=[ParsedCall(f"call_{turn}_0", call["name"], call["arguments"])]
                )
            else:
                text = json.dumps({"tool": call["name"], "arguments": call["arguments"]})
                reply = decode_text_reply(text, turn)
        else:
            raise AdapterError(f"scripted reply {turn} has none of call/answer/text: {item}")
        reply.tokens = tokens
        return reply
