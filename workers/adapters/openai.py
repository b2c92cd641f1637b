"""Any OpenAI-compatible chat-completions endpoint: Lemonade, vLLM, llama.cpp server, Ollama."""

from __future__ import annotations

import os
from typing import Any

import httpx

from schema import Message, ModelTarget, PromptConfig, TokenCounts
from workers.errors import InfraError
from workers.render import (
    chat_messages,
    decode_arguments,
    decode_text_reply,
    openai_tools,
    reply_schema,
)
from workers.toolspec import JsonReply, ModelReply, ParsedCall, Sampling, ToolSpec


class OpenAIClient:
    def __init__(self, target: ModelTarget) -> None:
        assert target.endpoint is not None  # the spec validator guarantees it
        self.target = target
        self.url = target.endpoint.rstrip("/") + "/chat/completions"
        key = os.environ.get(target.api_key_env, "") if target.api_key_env else ""
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.pins = {"adapter": "openai", "endpoint": target.endpoint, "model": target.model}

    def _body(
        self, messages: list[Message], tools: list[ToolSpec], prompt: PromptConfig, seed: int
    ) -> dict[str, Any]:
        gen = prompt.generation
        body: dict[str, Any] = {
            "model": self.target.model,
            "messages": chat_messages(messages, prompt.mode),
            "temperature": gen.temperature,
            "top_p": gen.top_p,
            "max_tokens": gen.max_tokens,
            "seed": gen.seed if gen.seed is not None else seed,
        }
        if prompt.mode == "native" and tools:
            body["tools"] = openai_tools(tools)
            body["tool_choice"] = "auto"
        elif prompt.mode == "grammar":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": reply_schema(tools)},
            }
        return body

    async def _post(self, body: dict[str, Any]) -> tuple[dict[str, Any], TokenCounts]:
        try:
            async with httpx.AsyncClient(timeout=self.target.request_timeout_s) as client:
                response = await client.post(self.url, json=body, headers=self.headers)
        except httpx.HTTPError as exc:
            raise InfraError(f"endpoint {self.url} unreachable: {exc!r}") from None
        if response.status_code >= 400:
            raise InfraError(
                f"endpoint {self.url} answered {response.status_code}: {response.text[:300]}"
            )
        data: dict[str, Any] = response.json()
        usage = data.get("usage") or {}
        tokens = TokenCounts(
            prompt=int(usage.get("prompt_tokens") or 0),
            completion=int(usage.get("completion_tokens") or 0),
        )
        return data, tokens

    async def complete_json(
        self, messages: list[dict[str, str]], schema: dict[str, Any], sampling: Sampling
    ) -> JsonReply:
        """One reply constrained to a JSON schema (`response_format: json_schema`)."""
        body = {
            "model": self.target.model,
            "messages": messages,
            "temperature": sampling.temperature,
            "max_tokens": sampling.max_tokens,
            "seed": sampling.seed,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "schema": schema},
            },
        }
        data, tokens = await self._post(body)
        return JsonReply(text=data["choices"][0]["message"].get("content") or "", tokens=tokens)

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec], prompt: PromptConfig, seed: int
    ) -> ModelReply:
        data, tokens = await self._post(self._body(messages, tools, prompt, seed))
        message = data["choices"][0]["message"]
        reply = self._decode(message, prompt, len([m for m in messages if m.role == "assistant"]))
        reply.tokens = tokens
        return reply

    @staticmethod
    def _decode(message: dict[str, Any], prompt: PromptConfig, turn: int) -> ModelReply:
        text = message.get("content") or ""
        if prompt.mode != "native":
            return decode_text_reply(text, turn)
        calls: list[ParsedCall] = []
        for i, raw in enumerate(message.get("tool_calls") or []):
            fn = raw.get("function") or {}
            name = fn.get("name") or ""
            args = decode_arguments(fn.get("arguments"), name)
            if isinstance(args, str) or not name:
                return ModelReply(
                    text=text,
                    format_error=args if isinstance(args, str) else "a tool call without a name",
                )
            calls.append(ParsedCall(raw.get("id") or f"call_{turn}_{i}", name, args))
        return ModelReply(text=text, calls=calls)
