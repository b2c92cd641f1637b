"""Streamed replies from the `openai` adapter: the time to the first token is recorded, the
assembled reply decodes exactly like the same reply unstreamed, and a broken stream ends as
an infra error or a format error, never an exception."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_farm.scenarios import (
    load_prompt,
    load_suite,
)
from mcp_farm.schema import (
    ModelTarget,
    PromptConfig,
    Settings,
)
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.model.openai import OpenAIClient
from mcp_farm.workers.model.openai_stream import (
    Streamed,
    assemble,
)
from mcp_farm.workers.model.toolspec import ModelReply
from mcp_farm.workers.trial import execute_trial
from tests.helpers import trial

NATIVE = load_prompt("native")
JSON_MODE = load_prompt("json")
USAGE = {"prompt_tokens": 31, "completion_tokens": 17}


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> str:
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
    if delta is not None:
        choice["delta"] = delta
    return json.dumps({"object": "chat.completion.chunk", "choices": [choice]})


def _call(index: int, **function: Any) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, "function": function}]}


# A reply with text and two tool calls, the first call's arguments split mid-token, as vLLM
# and llama.cpp stream them; the same reply unstreamed is NATIVE_MESSAGE.
NATIVE_EVENTS = [
    _chunk({"role": "assistant", "content": ""}),
    _chunk({"content": "Let me check "}),
    _chunk({"content": "the budget."}),
    _chunk(
        {
            "tool_calls": [
                {"index": 0, "id": "call_a", "function": {"name": "read_file", "arguments": ""}}
            ]
        }
    ),
    _chunk(_call(0, arguments='{"pa')),
    _chunk(_call(0, arguments='th": "/Documents/')),
    _chunk(_call(0, arguments='budget-q1-2026.md"}')),
    _chunk({"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "list_directory"}}]}),
    _chunk(_call(1, arguments='{"path": "/"}')),
    _chunk(finish="tool_calls"),
    json.dumps({"choices": [], "usage": USAGE}),
    "[DONE]",
]
NATIVE_MESSAGE = {
    "role": "assistant",
    "content": "Let me check the budget.",
    "tool_calls": [
        {
            "id": "call_a",
            "type": "function",
            "function": {
                "name": "read_file",
                "arguments": '{"path": "/Documents/budget-q1-2026.md"}',
            },
        },
        {
            "id": "call_b",
            "type": "function",
            "function": {"name": "list_directory", "arguments": '{"path": "/"}'},
        },
    ],
}
JSON_TEXT = '{"tool": "read_file", "arguments": {"path": "/Documents/budget-q1-2026.md"}}'
JSON_EVENTS = [
    *(_chunk({"content": JSON_TEXT[i : i + 9]}) for i in range(0, len(JSON_TEXT), 9)),
    _chunk(finish="stop"),
    json.dumps({"choices": [], "usage": USAGE}),
    "[DONE]",
]


@dataclass
class Endpoint:
    """What the fake endpoint answers: the same reply streamed or whole."""

    events: list[str]
    message: dict[str, Any]
    status: int = 200
    stream_anyway: bool = True
    """False: answer a plain completion even when asked to stream."""
    bodies: list[dict[str, Any]] = field(default_factory=list)


def _handler(endpoint: Endpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            endpoint.bodies.append(body)
            if endpoint.status != 200:
                self.send_response(endpoint.status)
                self.end_headers()
                self.wfile.write(b'{"error": {"message": "overloaded"}}')
            elif body.get("stream") and endpoint.stream_anyway:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for event in endpoint.events:
                    # One write per event, flushed: the client sees the deltas one by one.
                    self.wfile.write(f"data: {event}\n\n".encode())
                    self.wfile.flush()
            else:
                reply = {"choices": [{"index": 0, "message": endpoint.message}], "usage": USAGE}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

    return Handler


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(endpoint: Endpoint) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(endpoint))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _target(url: str, stream: bool) -> ModelTarget:
    return ModelTarget(id="m", adapter="openai", endpoint=url, model="qwen", stream=stream)


def _complete(url: str, stream: bool, prompt: PromptConfig = NATIVE) -> ModelReply:
    client = OpenAIClient(_target(url, stream))
    return anyio.run(client.complete, [], [], prompt, 7)


@pytest.mark.parametrize(
    ("prompt", "events", "message"),
    [
        (NATIVE, NATIVE_EVENTS, NATIVE_MESSAGE),
        (JSON_MODE, JSON_EVENTS, {"role": "assistant", "content": JSON_TEXT}),
    ],
    ids=["native", "json"],
)
def test_a_streamed_reply_decodes_like_the_same_reply_unstreamed(
    serve: Any, prompt: PromptConfig, events: list[str], message: dict[str, Any]
) -> None:
    endpoint = Endpoint(events, message)
    url = serve(endpoint)
    streamed, whole = _complete(url, True, prompt), _complete(url, False, prompt)
    assert endpoint.bodies[0]["stream"] is True and "stream" not in endpoint.bodies[1]
    assert streamed.format_error is None and streamed.calls
    assert (streamed.text, streamed.calls, streamed.tokens) == (
        whole.text,
        whole.calls,
        whole.tokens,
    )
    assert streamed.first_token_s is not None and streamed.first_token_s > 0
    assert whole.first_token_s is None


async def _ticking(events: list[str], clock: list[float]) -> AsyncIterator[str]:
    """SSE lines of `events`, the fake clock advancing one second per event."""
    for event in events:
        clock[0] += 1.0
        yield f"data: {event}"
        yield ""


def _assembled(events: list[str]) -> tuple[Streamed, list[float]]:
    clock = [0.0]
    streamed = anyio.run(assemble, _ticking(events, clock), "http://x/v1", 0.0, lambda: clock[0])
    return streamed, clock


def test_the_first_token_is_the_first_delta_that_carries_anything() -> None:
    # Event 1 only names the role and event 2 is empty; event 3 holds the first text.
    events = [_chunk({"role": "assistant"}), _chunk({"content": ""}), *NATIVE_EVENTS[1:]]
    streamed, clock = _assembled(events)
    assert streamed.first_token_s == 3.0 and clock[0] == len(events)
    assert streamed.message == NATIVE_MESSAGE and streamed.usage == USAGE


@pytest.mark.parametrize(
    ("events", "problem"),
    [
        (["<html>Bad gateway</html>"], "streamed an event that is no JSON"),
        ([json.dumps({"error": {"message": "overloaded"}})], "streamed no completion chunk"),
        ([json.dumps({"choices": {"0": {}}})], "streamed a chunk without a choice"),
        ([json.dumps({"choices": [{"delta": "hi"}]})], "streamed a delta that is no object"),
        (["[DONE]"], "streamed no choices"),
        (NATIVE_EVENTS[:5], "ended before the reply was complete"),
    ],
    ids=["not-json", "error-event", "choices-not-a-list", "delta-not-an-object", "empty", "cut"],
)
def test_a_stream_that_is_no_completion_is_the_endpoints_failure(
    events: list[str], problem: str
) -> None:
    with pytest.raises(InfraError, match=problem):
        _assembled(events)


def _decoded(events: list[str]) -> ModelReply:
    return OpenAIClient._decode(_assembled(events)[0].message, NATIVE, 0)


def _whole(message: dict[str, Any]) -> ModelReply:
    return OpenAIClient._decode(message, NATIVE, 0)


END = [_chunk(finish="stop"), "[DONE]"]


@pytest.mark.parametrize(
    ("events", "same_as"),
    [
        (
            [_chunk(_call(0, name="read_file", arguments='{"path": ')), *END],
            {"tool_calls": [{"function": {"name": "read_file", "arguments": '{"path": '}}]},
        ),
        (
            [_chunk({"tool_calls": ["oops"]}), *END],
            {"tool_calls": ["oops"]},
        ),
        (
            [_chunk(_call(0, name=["read_file"], arguments="{}")), *END],
            {"tool_calls": [{"function": {"name": ["read_file"], "arguments": "{}"}}]},
        ),
        (
            [_chunk(_call(0, name="read_file", arguments='{"n": NaN}')), *END],
            {"tool_calls": [{"function": {"name": "read_file", "arguments": '{"n": NaN}'}}]},
        ),
        ([_chunk({"tool_calls": "read_file"}), *END], {"tool_calls": "read_file"}),
    ],
    ids=["cut-arguments", "call-not-an-object", "name-not-text", "nan", "calls-not-a-list"],
)
def test_a_broken_call_in_a_stream_is_the_same_format_error_as_unstreamed(
    events: list[str], same_as: dict[str, Any]
) -> None:
    streamed = _decoded(events)
    assert streamed.format_error is not None
    assert streamed.format_error == _whole({"content": None, **same_as}).format_error


def test_content_that_is_not_text_in_a_stream_is_a_format_error() -> None:
    streamed = _decoded([_chunk({"content": "The total is "}), _chunk({"content": 46550}), *END])
    assert streamed.format_error == "the content is a list, not text"
    assert "46550" in streamed.text  # the reply as it came stays in the transcript


def test_an_endpoint_error_status_on_a_stream_is_an_infra_error(serve: Any) -> None:
    url = serve(Endpoint(NATIVE_EVENTS, NATIVE_MESSAGE, status=503))
    with pytest.raises(InfraError, match=r"answered 503: .*overloaded"):
        _complete(url, True)


def test_a_server_that_answers_a_stream_request_whole_is_read_as_a_whole_reply(
    serve: Any,
) -> None:
    url = serve(Endpoint(NATIVE_EVENTS, NATIVE_MESSAGE, stream_anyway=False))
    reply = _complete(url, True)
    assert [c.name for c in reply.calls] == ["read_file", "list_directory"]
    assert reply.first_token_s is None  # nothing streamed, nothing to time


STREAM_LINES = st.lists(
    st.one_of(
        st.text(max_size=40),
        st.sampled_from(NATIVE_EVENTS + JSON_EVENTS).map(lambda e: f"data: {e}"),
        st.sampled_from(["", "data: [DONE]", ": keep-alive", "event: message", "data: {"]),
    ),
    max_size=30,
)


@settings(
    max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(lines=STREAM_LINES)
def test_any_stream_ends_in_a_decoded_reply_or_an_infra_error(lines: list[str]) -> None:
    async def feed() -> AsyncIterator[str]:
        for line in lines:
            yield line

    try:
        streamed = anyio.run(assemble, feed(), "http://x/v1", 0.0)
    except InfraError:
        return
    reply = OpenAIClient._decode(streamed.message, NATIVE, 0)
    assert isinstance(reply.text, str)


@pytest.mark.integration
def test_a_streamed_trial_records_its_time_to_first_token(serve: Any, settings: Settings) -> None:
    answer = {"role": "assistant", "content": "Nothing on the Desktop."}
    events = [_chunk({"content": "Nothing on "}), _chunk({"content": "the Desktop."}), *END]
    url = serve(Endpoint(events, answer))
    scenario = load_suite("basic").scenarios[0]
    spec = trial(scenario, []).model_copy(update={"model": _target(url, True)})
    result = anyio.run(execute_trial, spec, settings)
    assert result.final_answer == "Nothing on the Desktop."
    assert result.first_token_s is not None and result.model_s is not None
    assert 0 < result.first_token_s <= result.model_s
    assert result.provenance.model_pins["stream"] == "true"


def test_a_target_that_does_not_stream_keeps_the_trial_ids_it_always_had() -> None:
    scenario = load_suite("basic").scenarios[0]
    off, on = _target("http://x/v1", False), _target("http://x/v1", True)
    assert "stream" not in off.model_dump(mode="json")  # what trial and sweep ids digest
    assert on.model_dump(mode="json")["stream"] is True
    ids = {
        trial(scenario, []).model_copy(update={"model": t}).identity()["model"].get("stream")
        for t in (off, on)
    }
    assert ids == {None, True}


def test_stream_is_refused_on_adapters_that_cannot_stream() -> None:
    with pytest.raises(ValueError, match="`stream` applies only to the openai adapter"):
        ModelTarget(id="m", adapter="scripted", model="s", script=[], stream=True)
