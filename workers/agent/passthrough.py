"""The model pass-through: an OpenAI-compatible address on loopback that forwards an agent's
model calls to the endpoint its target names (`model_via`) and records each call's tokens,
time to first token and time, as the farm's own loop records a model's (docs/agents.md).

It answers only requests that carry the trial's own token (`Authorization: Bearer …`): the
real endpoint's key stays in the worker, and another process on the machine cannot spend it.
"""

from __future__ import annotations

import hmac
import json
import math
import os
import secrets
import socket
import ssl
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from mcp_farm.schema import TokenCounts, remember_secret
from mcp_farm.schema.specs import ModelVia
from mcp_farm.workers.agent.web import served
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.session import SessionState

HOST = "127.0.0.1"

UPSTREAM_TIMEOUT = httpx.Timeout(600.0, connect=30.0)
"""How long one forwarded call may take: the agent's own time limit ends a turn sooner."""

FORWARDED_HEADERS = ("content-type", "x-request-id", "openai-processing-ms")
"""The endpoint's response headers passed on to the agent (never its cookies or keys)."""


@lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    """One TLS context for every trial's pass-through: building one per client loads the CA
    bundle each time."""
    return httpx.create_ssl_context()


@dataclass(frozen=True)
class ModelCall:
    """One chat completion the agent asked for through the pass-through."""

    status: int
    """The endpoint's HTTP status; 502 when it could not be reached."""
    tokens: TokenCounts
    """As the endpoint's `usage` reports them (zero where it reports none)."""
    reported: bool
    """The endpoint reported a `usage`."""
    seconds: float
    """From the request sent to the response's end (the stream's last event)."""
    first_token_s: float | None
    """Streams only: from the request sent to the first event that carried anything."""
    said: str = ""
    """A failed call: what the endpoint answered (its start), or why it was not reached."""


@dataclass
class PassThrough:
    """A running pass-through: where the agent reaches it, and what went through it."""

    url: str
    """Its base URL, …/v1."""
    token: str
    """The key the agent must present (its `OPENAI_API_KEY`); new for every trial."""
    calls: list[ModelCall] = field(default_factory=list)


def measure(state: SessionState, calls: list[ModelCall]) -> None:
    """The trial's tokens, model time and first token from the agent's model calls that went
    through the pass-through, as the farm's loop sums a model's; none went: not measured."""
    if not calls:
        return
    state.model_measured = True
    state.tokens = TokenCounts(
        prompt=sum(c.tokens.prompt for c in calls),
        completion=sum(c.tokens.completion for c in calls),
    )
    state.model_s = sum(c.seconds for c in calls)
    state.first_token_s = next(
        (c.first_token_s for c in calls if c.first_token_s is not None), None
    )


ENDPOINT_FAULTS = frozenset({401, 403, 429})
"""Statuses below 500 that are the endpoint's or the worker's key's doing, not the request's
(a 400, 404 or 422 answers what the agent asked)."""


def endpoint_fault(calls: list[ModelCall]) -> str | None:
    """Why the endpoint failed the agent, when the last of `calls` failed there (unreachable,
    5xx, the worker's key refused, rate-limited); None otherwise."""
    if not calls or not (calls[-1].status >= 500 or calls[-1].status in ENDPOINT_FAULTS):
        return None
    last = calls[-1]
    return f"the agent's model endpoint failed its last call ({last.status}): {last.said}"


def usage_tokens(usage: Any) -> TokenCounts | None:
    """Token counts from a `usage` object; None when there is none."""
    if not isinstance(usage, dict):
        return None
    return TokenCounts(
        prompt=_count(usage.get("prompt_tokens")), completion=_count(usage.get("completion_tokens"))
    )


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return 0
    return max(int(value), 0)


def _carries(chunk: Any) -> bool:
    """A stream chunk with content, reasoning or a call: its arrival is the first token."""
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return False
    delta = choices[0].get("delta")
    if not isinstance(delta, dict):
        return False
    return any(
        delta.get(k) not in (None, "", []) for k in ("content", "reasoning_content", "tool_calls")
    )


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "farm_pass_through"}}, status)


@dataclass
class _Stream:
    """Reads a forwarded stream event by event: records its usage and first token, and leaves
    out the usage-only event when the agent did not ask for it."""

    started: float
    agent_asked_usage: bool
    tokens: TokenCounts | None = None
    first_token_s: float | None = None

    def keep(self, data: str) -> bool:
        try:
            chunk = json.loads(data)
        except ValueError:
            return True  # `[DONE]`, or whatever the endpoint sent: the agent's to read
        if self.first_token_s is None and _carries(chunk):
            self.first_token_s = time.perf_counter() - self.started
        usage = usage_tokens(chunk.get("usage")) if isinstance(chunk, dict) else None
        if usage is None:
            return True
        self.tokens = usage
        return self.agent_asked_usage or chunk.get("choices") not in (None, [])


def _app(
    via: ModelVia, through: PassThrough, client: httpx.AsyncClient, key: str | None
) -> Starlette:
    base = via.endpoint.rstrip("/")

    def answer(response: httpx.Response) -> Response:
        """The endpoint's answer as the agent gets it: without the worker's key, should the
        endpoint echo it back (some proxies quote the request's headers in their errors)."""
        content = response.content.replace(key.encode(), b"[masked]") if key else response.content
        return Response(content, response.status_code, passed(response))

    def authorised(request: Request) -> bool:
        said = request.headers.get("authorization", "")
        return hmac.compare_digest(said.encode(), f"Bearer {through.token}".encode())

    def passed(response: httpx.Response) -> dict[str, str]:
        return {k: v for k, v in response.headers.items() if k.lower() in FORWARDED_HEADERS}

    async def models(request: Request) -> Response:
        if not authorised(request):
            return _error(401, "this address answers only the trial's agent (its OPENAI_API_KEY)")
        try:
            response = await client.get(f"{base}/models")
        except httpx.HTTPError as exc:
            return _error(502, f"the model endpoint could not be reached: {type(exc).__name__}")
        return answer(response)

    async def chat(request: Request) -> Response:
        if not authorised(request):
            return _error(401, "this address answers only the trial's agent (its OPENAI_API_KEY)")
        try:
            body = json.loads(await request.body())
        except ValueError:
            return _error(400, "the request body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "the request body is not a JSON object")
        if body.get("stream") is True:
            return await _streamed(body)
        started = time.perf_counter()
        try:
            response = await client.post(f"{base}/chat/completions", json=body)
        except httpx.HTTPError as exc:
            return _unreachable(started, exc)
        through.calls.append(_plain_call(response, started))
        return answer(response)

    def _unreachable(started: float, exc: httpx.HTTPError) -> Response:
        seconds = time.perf_counter() - started
        said = f"the model endpoint could not be reached: {type(exc).__name__}"
        through.calls.append(ModelCall(502, TokenCounts(), False, seconds, None, said))
        return _error(502, said)

    async def _streamed(body: dict[str, Any]) -> Response:
        options = body.get("stream_options")
        asked = isinstance(options, dict) and options.get("include_usage") is True
        options = options if isinstance(options, dict) else {}
        body = {**body, "stream_options": {**options, "include_usage": True}}
        started = time.perf_counter()
        request = client.build_request("POST", f"{base}/chat/completions", json=body)
        try:
            response = await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            return _unreachable(started, exc)
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            await response.aread()
            await response.aclose()
            through.calls.append(_plain_call(response, started))
            return answer(response)
        stream = _Stream(started, asked)

        async def events() -> AsyncIterator[bytes]:
            try:
                async for event in _events(response.aiter_lines()):
                    data = "\n".join(
                        line[5:].removeprefix(" ") for line in event if line.startswith("data:")
                    )
                    if not data or stream.keep(data):
                        yield ("\n".join(event) + "\n\n").encode("utf-8")
            finally:
                seconds = time.perf_counter() - started
                tokens = stream.tokens or TokenCounts()
                through.calls.append(
                    ModelCall(
                        response.status_code,
                        tokens,
                        stream.tokens is not None,
                        seconds,
                        stream.first_token_s,
                    )
                )

        return StreamingResponse(
            events(),
            response.status_code,
            passed(response),
            background=BackgroundTask(response.aclose),
        )

    return Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ]
    )


def _plain_call(response: httpx.Response, started: float) -> ModelCall:
    seconds = time.perf_counter() - started
    try:
        data = json.loads(response.content)
    except ValueError:
        data = None
    tokens = usage_tokens(data.get("usage")) if isinstance(data, dict) else None
    said = "" if response.status_code < 400 else response.text[:300]
    return ModelCall(
        response.status_code, tokens or TokenCounts(), tokens is not None, seconds, None, said
    )


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[list[str]]:
    """The stream's server-sent events, each as its lines."""
    event: list[str] = []
    async for line in lines:
        if line == "":
            if event:
                yield event
            event = []
        else:
            event.append(line)
    if event:
        yield event


@asynccontextmanager
async def passing_through(
    via: ModelVia, environ: Callable[[str], str | None] = os.environ.get
) -> AsyncIterator[PassThrough]:
    """Serve a pass-through to `via` on 127.0.0.1 while the context is open."""
    key = environ(via.api_key_env) if via.api_key_env else None
    if via.api_key_env and key is None:
        raise InfraError(
            f"the agent's `model_via` names the key variable {via.api_key_env}, which this "
            "worker's environment does not set"
        )
    remember_secret(key)  # masked wherever it turns up: an endpoint may echo it back
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((HOST, 0))
    through = PassThrough(
        url=f"http://{HOST}:{sock.getsockname()[1]}/v1", token=f"farm-{secrets.token_hex(24)}"
    )
    async with AsyncExitStack() as stack:
        stack.callback(sock.close)
        client = await stack.enter_async_context(
            httpx.AsyncClient(headers=headers, timeout=UPSTREAM_TIMEOUT, verify=_tls())
        )
        async with served(_app(via, through, client, key), sock):
            yield through
