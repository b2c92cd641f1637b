"""A tiny OpenAI-compatible server on a loopback port, for tests of what the farm does with
endpoints: it lists chosen model ids, answers chat completions (in turn, or fails them), may
demand a key, and remembers the Authorization headers it saw."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Behaviour:
    models: list[str]
    """Ids listed at GET /v1/models."""
    chat_status: int = 200
    """Status of every chat completion; anything but 200 answers with an error body."""
    key: str | None = None
    """When set, requests without `Authorization: Bearer <key>` get 401."""
    answer: str = "I looked, but I cannot tell."
    replies: list[str] = field(default_factory=list)
    """Answers given in turn, one per chat completion, before `answer` (then every time)."""
    echo_auth: bool = False
    """Fail every chat completion with an error body that quotes the request's Authorization
    header, as some proxies do."""
    refuse_json_schema: bool = False
    """Refuse `response_format: {type: json_schema}` as llama-cpp-python's server does: 500,
    with its validation error."""
    seen_auth: list[str] = field(default_factory=list)
    seen_formats: list[str] = field(default_factory=list)
    """The `response_format` type of each chat completion asked (empty string for none)."""
    seen_systems: list[str] = field(default_factory=list)
    """The system message of each chat completion asked (empty string for none)."""


@dataclass
class FakeEndpoint:
    url: str
    """The base URL, …/v1."""
    behaviour: Behaviour


def _handler(behaviour: Behaviour) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass  # the test output stays about the farm

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorised(self) -> bool:
            auth = self.headers.get("Authorization", "")
            behaviour.seen_auth.append(auth)
            if behaviour.key is None or auth == f"Bearer {behaviour.key}":
                return True
            self._send(401, {"error": {"message": "invalid api key"}})
            return False

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                self._send(404, {"error": {"message": "not found"}})
            elif self._authorised():
                self._send(200, {"object": "list", "data": [{"id": m} for m in behaviour.models]})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            asked = (body.get("response_format") or {}).get("type", "")
            behaviour.seen_formats.append(asked)
            systems = [m for m in body.get("messages") or [] if m.get("role") == "system"]
            behaviour.seen_systems.append(str(systems[0].get("content", "")) if systems else "")
            if self.path != "/v1/chat/completions":
                self._send(404, {"error": {"message": "not found"}})
            elif not self._authorised():
                return
            elif behaviour.echo_auth:
                auth = self.headers.get("Authorization", "")
                self._send(500, {"error": {"message": f"upstream refused; headers: {auth}"}})
            elif behaviour.refuse_json_schema and asked == "json_schema":
                said = (
                    "('body', 'response_format', 'type'): Input should be 'text' or 'json_object'"
                )
                self._send(500, {"error": {"message": said, "type": "internal_server_error"}})
            elif behaviour.chat_status != 200:
                self._send(behaviour.chat_status, {"error": {"message": "the model crashed"}})
            else:
                said = behaviour.replies.pop(0) if behaviour.replies else behaviour.answer
                message = {"role": "assistant", "content": said}
                self._send(
                    200,
                    {
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 12, "completion_tokens": 7},
                    },
                )

    return Handler


@contextmanager
def fake_openai(behaviour: Behaviour) -> Iterator[FakeEndpoint]:
    """Serve `behaviour` on a free loopback port for the duration of the block."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(behaviour))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield FakeEndpoint(f"http://127.0.0.1:{server.server_address[1]}/v1", behaviour)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
