"""The reference agent on an OpenAI-compatible endpoint: it lists the tools from the trial's
config file, makes the call the model asks for through the farm's proxy, and prints the model's
answer; the farm grades its call like a model's."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import ModelTarget, Settings
from mcp_farm.workers.trial import execute_trial
from tests.helpers import trial

SCENARIO = load_suite("basic").scenarios[0]
STEP = SCENARIO.ways()[0][1].expect[0]


class _Model(BaseHTTPRequestHandler):
    """A model that calls the scenario's first step, then answers; it keeps what it was sent."""

    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Model.seen.append(body)
        if any(m["role"] == "tool" for m in body["messages"]):
            message: dict[str, Any] = {"role": "assistant", "content": "All done."}
        else:
            call = {"name": STEP.names[0], "arguments": json.dumps(STEP.example or {})}
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": call}],
            }
        data = json.dumps({"choices": [{"message": message}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: Any) -> None:
        return


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        thread.join(timeout=10)


def test_the_reference_agent_calls_through_the_proxy_and_is_graded(
    endpoint: str, settings: Settings, tmp_path: Path
) -> None:
    command = [
        "{python}", "-m", "mcp_farm.scenarios.agents.reference",
        "--config", "{mcp_config}", "--endpoint", endpoint, "--model", "stub",
    ]  # fmt: skip
    target = ModelTarget.model_validate(
        {"id": "reference", "adapter": "agent", "model": "stub", "agent": {"command": command}}
    )
    spec = trial(SCENARIO, []).model_copy(update={"model": target})
    result = anyio.run(execute_trial, spec, settings)
    assert [c.tool for c in result.tool_calls] == [STEP.names[0]]
    assert result.final_answer == "All done."
    assert result.tool_calls[0].ok
    listed = {t["function"]["name"] for t in _Model.seen[0]["tools"]}
    assert STEP.names[0] in listed
    # The reply with the call is sent back with a content (chat templates read the key).
    assert all("content" in m for m in _Model.seen[-1]["messages"])
