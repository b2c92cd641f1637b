"""Any OpenAI-compatible chat-completions endpoint: Lemonade, vLLM, llama.cpp server, Ollama."""

from __future__ import annotations

import math
import os
import ssl
import time
from functools import lru_cache
from typing import Any

import httpx

from mcp_farm.schema import (
    Message,
    ModelTarget,
    PromptConfig,
    TokenCounts,
    remember_secret,
)
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.model.decode import (
    content_text,
    decode_text_reply,
    native_call,
)
from mcp_farm.workers.model.encode import (
    chat_messages,
    openai_tools,
    reply_schema,
)
from mcp_farm.workers.model.openai_stream import assemble
from mcp_farm.workers.model.safejson import (
    UnreadableJson,
    as_json_text,
    loads,
)
from mcp_farm.workers.model.toolspec import (
    JsonReply,
    ModelReply,
    ParsedCall,
    Sampling,
    ToolSpec,
)


@lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    """One TLS context for every request of the process. httpx builds a new one per client
    otherwise, loading the CA bundle each time: with many sessions in one process that took
    more CPU than everything else the farm does per trial together."""
    return httpx.create_ssl_context()


JSON_OBJECT = "json_object"
"""The other way to ask for a reply held to a JSON schema: `{"type": "json_object", "schema":
…}`, which llama-cpp-python's server (and some others) take where they refuse OpenAI's
`json_schema` form."""

_FORMS: dict[str, str] = {}
"""Endpoint URL → the schema form it accepted after refusing `json_schema`; per process."""


def response_format(form: str, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    if form == JSON_OBJECT:
        return {"type": JSON_OBJECT, "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


def _refused_form(body: dict[str, Any], response: httpx.Response) -> dict[str, Any] | None:
    """The same request in the `json_object` form, when the endpoint refused one in the
    `json_schema` form for that form (an error naming the response format: llama-cpp-python's
    server answers 500 with its validation error); else None."""
    asked = body.get("response_format") or {}
    if response.status_code < 400 or asked.get("type") != "json_schema":
        return None
    said = response.text
    if "response_format" not in said and "json_schema" not in said:
        return None
    schema = asked["json_schema"]
    return {
        **body,
        "response_format": response_format(JSON_OBJECT, schema["name"], schema["schema"]),
    }


class OpenAIClient:
    def __init__(self, target: ModelTarget) -> None:
        assert target.endpoint is not None  # the spec validator guarantees it
        self.target = target
        self.url = target.endpoint.rstrip("/") + "/chat/completions"
        key = os.environ.get(target.api_key_env, "") if target.api_key_env else ""
        remember_secret(key)  # masked wherever it turns up: an endpoint may echo it back
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.pins = {"adapter": "openai", "endpoint": target.endpoint, "model": target.model}
        if target.stream:
            self.pins["stream"] = "true"

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
            form = _FORMS.get(self.url, "json_schema")
            body["response_format"] = response_format(form, "reply", reply_schema(tools))
        return body

    async def _post(self, body: dict[str, Any]) -> tuple[dict[str, Any], TokenCounts]:
        try:
            async with httpx.AsyncClient(
                timeout=self.target.request_timeout_s * self.target.time_scale, verify=_tls()
            ) as client:
                response = await client.post(self.url, json=body, headers=self.headers)
                other = _refused_form(body, response)
                if other is not None:
                    retried = await client.post(self.url, json=other, headers=self.headers)
                    if retried.status_code < 400:
                        _FORMS[self.url] = JSON_OBJECT
                        response = retried
        except httpx.HTTPError as exc:
            raise InfraError(f"endpoint {self.url} unreachable: {exc!r}") from None
        if response.status_code >= 400:
            raise InfraError(
                f"endpoint {self.url} answered {response.status_code}: {response.text[:300]}"
            )
        # JSON is UTF-8 (RFC 8259); bytes that are not become U+FFFD rather than an exception.
        data = completion(response.content.decode("utf-8", errors="replace"), self.url)
        return data, _tokens(data.get("usage"))

    async def _stream(self, body: dict[str, Any]) -> tuple[Any, TokenCounts, float | None]:
        """The reply's message, its tokens and the time to its first token, streamed.

        A server that answers a plain completion instead of a stream is read as one (no first
        token time then): `stream` asks, it cannot insist."""
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        started = time.perf_counter()
        try:
            async with (
                httpx.AsyncClient(
                    timeout=self.target.request_timeout_s * self.target.time_scale, verify=_tls()
                ) as client,
                client.stream("POST", self.url, json=body, headers=self.headers) as response,
            ):
                if response.status_code >= 400:
                    text = (await response.aread()).decode("utf-8", errors="replace")
                    raise InfraError(
                        f"endpoint {self.url} answered {response.status_code}: {text[:300]}"
                    )
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    raw = (await response.aread()).decode("utf-8", errors="replace")
                    data = completion(raw, self.url)
                    return first_message(data), _tokens(data.get("usage")), None
                streamed = await assemble(response.aiter_lines(), self.url, started)
        except httpx.HTTPError as exc:
            raise InfraError(f"endpoint {self.url} stream broke: {exc!r}") from None
        return streamed.message, _tokens(streamed.usage), streamed.first_token_s

    async def complete_json(
        self, messages: list[dict[str, str]], schema: dict[str, Any], sampling: Sampling
    ) -> JsonReply:
        """One reply constrained to a JSON schema (`response_format`, in the form the endpoint
        takes)."""
        body = {
            "model": self.target.model,
            "messages": messages,
            "temperature": sampling.temperature,
            "max_tokens": sampling.max_tokens,
            "seed": sampling.seed,
            "response_format": response_format(
                _FORMS.get(self.url, "json_schema"), "verdict", schema
            ),
        }
        data, tokens = await self._post(body)
        return JsonReply(text=_verdict_text(first_message(data)), tokens=tokens)

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec], prompt: PromptConfig, seed: int
    ) -> ModelReply:
        body = self._body(messages, tools, prompt, seed)
        first_token_s = None
        if self.target.stream:
            message, tokens, first_token_s = await self._stream(body)
        else:
            data, tokens = await self._post(body)
            message = first_message(data)
        reply = self._decode(message, prompt, len([m for m in messages if m.role == "assistant"]))
        reply.tokens = tokens
        reply.first_token_s = first_token_s
        return reply

    @staticmethod
    def _decode(message: Any, prompt: PromptConfig, turn: int) -> ModelReply:
        """The model's turn from a completion's message: never raises. Anything that is not a
        usable answer or call is a format error whose text is the message as it came."""
        if not isinstance(message, dict):
            return ModelReply(
                text=as_json_text(message), format_error="the message is not an object"
            )
        text = content_text(message.get("content"))
        if text is None:
            kind = type(message.get("content")).__name__
            return ModelReply(
                text=as_json_text(message), format_error=f"the content is a {kind}, not text"
            )
        if prompt.mode != "native":
            return decode_text_reply(text, turn)
        raw_calls = message.get("tool_calls")
        if raw_calls is None or raw_calls == []:
            return ModelReply(text=text)
        if not isinstance(raw_calls, list):
            kind = type(raw_calls).__name__
            return ModelReply(
                text=as_json_text(message), format_error=f"`tool_calls` is a {kind}, not a list"
            )
        calls: list[ParsedCall] = []
        for i, raw in enumerate(raw_calls):
            call = native_call(raw, f"call_{turn}_{i}")
            if isinstance(call, str):
                return ModelReply(text=as_json_text(message), format_error=call)
            calls.append(call)
        return ModelReply(text=text, calls=calls)


MAX_BODY_DEPTH = 128
"""Nesting allowed in a completion's body: the envelope is a few levels, and extensions such as
log-probabilities add a few more; the model's own JSON travels inside strings."""


def completion(body: str, url: str) -> dict[str, Any]:
    """A 200 response's body as a chat completion whose first choice has a message object.

    A body that is not that (an HTML error page, a proxy's banner, an error object, a truncated
    stream) is the endpoint's failure, not the model's: InfraError. What the message holds is
    the model's, and is classified by `_decode`.
    """
    try:
        # Lenient: a server may write NaN in its own statistics; the model's text is in strings.
        data = loads(body, MAX_BODY_DEPTH, lenient=True)
    except UnreadableJson as exc:
        raise InfraError(
            f"endpoint {url} answered 200 with no completion ({exc}): {body[:200]!r}"
        ) from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices:
        raise InfraError(f"endpoint {url} answered 200 without choices: {body[:300]!r}")
    first = choices[0]
    if not isinstance(first, dict) or "message" not in first:
        raise InfraError(f"endpoint {url} answered a choice without a message: {body[:300]!r}")
    assert isinstance(data, dict)
    return data


def first_message(data: dict[str, Any]) -> Any:
    """The first choice's message of a body `completion` accepted (of any type)."""
    return data["choices"][0]["message"]


def _verdict_text(message: Any) -> str:
    """A judge's reply as text; an odd shape becomes text the verdict reader finds unreadable,
    so a judge's junk is counted as an unreadable run, like any unreadable reply."""
    if not isinstance(message, dict):
        return as_json_text(message)
    text = content_text(message.get("content"))
    return text if text is not None else as_json_text(message.get("content"))


def _tokens(usage: Any) -> TokenCounts:
    """Token counts from a body's `usage`, whatever shape it has."""
    usage = usage if isinstance(usage, dict) else {}
    return TokenCounts(
        prompt=_count(usage.get("prompt_tokens")),
        completion=_count(usage.get("completion_tokens")),
    )


def _count(value: Any) -> int:
    """A token count as reported; anything but a whole non-negative number counts as none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return 0
    return max(int(value), 0)
