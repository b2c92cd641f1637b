"""The model pass-through of an agent target (`model_via`): the agent's model calls go through
an OpenAI-compatible address on loopback that answers only the trial's token, forwards to the
real endpoint with its key, and records tokens, time to first token and model time; an agent
row without it keeps them "not measured"; a bad `model_via` is refused naming file and field."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.submission.expand import load_sweep
from mcp_farm.schema import ModelTarget, Settings, SpecError
from mcp_farm.schema.specs import ModelVia
from mcp_farm.workers.agent.passthrough import PassThrough, passing_through
from mcp_farm.workers.agent.process import agent_env
from mcp_farm.workers.trial import execute_trial
from tests.fake_openai import Behaviour, fake_openai
from tests.helpers import ideal_script, trial

SCENARIO = load_suite("basic").scenarios[0]
REAL_KEY = "real-endpoint-key-0123456789"
REFERENCE = ["{python}", "-m", "mcp_farm.scenarios.agents.reference", "--config", "{mcp_config}"]


def _agent_target(**agent: Any) -> ModelTarget:
    return ModelTarget.model_validate(
        {"id": "agent", "adapter": "agent", "model": "agent", "agent": agent}
    )


def test_the_reference_agent_through_the_pass_through_records_the_endpoints_tokens(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MODEL_KEY", REAL_KEY)
    with fake_openai(Behaviour(models=["stub"], key=REAL_KEY)) as fake:
        via = {"endpoint": fake.url, "api_key_env": "FAKE_MODEL_KEY"}
        target = _agent_target(command=REFERENCE, model_via=via)
        spec = trial(SCENARIO, []).model_copy(update={"model": target})
        result = anyio.run(execute_trial, spec, settings)
    assert result.final_answer == "I looked, but I cannot tell."
    # One model call, as the endpoint's usage reported it (the fake says 12 and 7).
    assert result.tokens is not None
    assert (result.tokens.prompt, result.tokens.completion) == (12, 7)
    assert result.model_s is not None and result.model_s > 0
    assert result.first_token_s is None  # not streamed: no first token to time
    # The endpoint got the real key from the worker; the record never holds it.
    assert fake.behaviour.seen_auth == [f"Bearer {REAL_KEY}"]
    assert REAL_KEY not in result.model_dump_json()
    pins = result.provenance.model_pins
    assert (pins["tokens"], pins["model_calls"]) == ("pass-through", "1")


def test_an_agent_row_whose_model_calls_do_not_pass_the_farm_keeps_not_measured(
    settings: Settings, tmp_path: Path
) -> None:
    script = ideal_script(SCENARIO)
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    command = ["{python}", "-m", "mcp_farm.scenarios.agents.scripted", "--config", "{mcp_config}"]
    with fake_openai(Behaviour(models=["stub"])) as fake:
        for via in (None, {"endpoint": fake.url}):
            agent: dict[str, Any] = {"command": command, "env": {"FARM_AGENT_SCRIPT": str(path)}}
            if via is not None:  # a pass-through the agent never calls measures nothing
                agent["model_via"] = via
            spec = trial(SCENARIO, script).model_copy(update={"model": _agent_target(**agent)})
            result = anyio.run(execute_trial, spec, settings)
            assert result.outcome == "pass", result.detail
            assert (result.tokens, result.model_s, result.first_token_s) == (None, None, None)
            assert result.provenance.model_pins["tokens"] == "not measured"


class _Streaming(BaseHTTPRequestHandler):
    """A model that streams its answer (with a usage event only when asked for one)."""

    bodies: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Streaming.bodies.append(body)
        events = [
            {"choices": [{"index": 0, "delta": {"role": "assistant"}}]},
            {"choices": [{"index": 0, "delta": {"content": "Hel"}}]},
            {"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}]},
        ]
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append({"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 2}})
        data = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data.encode())))
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *_args: Any) -> None:
        return


@pytest.fixture
def streaming() -> Iterator[str]:
    _Streaming.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Streaming)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        thread.join(timeout=10)


def _through(endpoint: str, requests: list[dict[str, Any]]) -> tuple[PassThrough, list[str]]:
    """Send each request (`auth`: the Authorization header, `body`) through a pass-through."""

    async def run() -> tuple[PassThrough, list[str]]:
        answers = []
        async with (
            passing_through(ModelVia(endpoint=endpoint)) as through,
            httpx.AsyncClient(base_url=through.url) as client,
        ):
            for request in requests:
                auth = request["auth"].replace("{token}", through.token)
                headers = {"Authorization": auth} if auth else {}
                if "body" in request:
                    got = await client.post(
                        "/chat/completions", json=request["body"], headers=headers
                    )
                else:
                    got = await client.get("/models", headers=headers)
                answers.append(f"{got.status_code} {got.text}")
        return through, answers

    return anyio.run(run)


def test_a_streamed_call_records_its_usage_and_first_token_and_the_agent_gets_its_stream(
    streaming: str,
) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    through, answers = _through(streaming, [{"auth": "Bearer {token}", "body": body}])
    # The pass-through asked for the usage; the agent, which did not, gets no usage event.
    assert _Streaming.bodies[0]["stream_options"] == {"include_usage": True}
    assert answers[0].startswith("200 ")
    assert '"Hel"' in answers[0] and "[DONE]" in answers[0] and "usage" not in answers[0]
    [call] = through.calls
    assert (call.tokens.prompt, call.tokens.completion, call.reported) == (30, 2, True)
    assert call.first_token_s is not None and 0 < call.first_token_s <= call.seconds


def test_a_stream_that_asked_for_its_usage_gets_it(streaming: str) -> None:
    body = {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}}
    through, answers = _through(streaming, [{"auth": "Bearer {token}", "body": body}])
    assert '"prompt_tokens": 30' in answers[0]
    assert through.calls[0].tokens.prompt == 30


def test_a_request_without_the_trials_token_gets_401_and_reaches_no_endpoint() -> None:
    with fake_openai(Behaviour(models=["stub"])) as fake:
        body = {"model": "stub", "messages": []}
        through, answers = _through(
            fake.url,
            [
                {"auth": "", "body": body},
                {"auth": "Bearer not-the-token", "body": body},
                {"auth": "", "models": True},
                {"auth": "Bearer {token}", "models": True},
            ],
        )
    assert [a[:3] for a in answers] == ["401", "401", "401", "200"]
    assert "stub" in answers[3]
    assert through.calls == []  # a listing is no model call; refused requests are none
    assert len(fake.behaviour.seen_auth) == 1  # only the listing with the token went on


def test_the_agent_gets_the_pass_throughs_address_and_token_never_the_real_key() -> None:
    target = _agent_target(
        command=["agent", "{model_url}"],
        pass_env=["OPENAI_API_KEY"],
        model_via={"endpoint": "http://127.0.0.1:9/v1", "api_key_env": "REAL_KEY"},
    )
    assert target.agent is not None
    environ = {"OPENAI_API_KEY": REAL_KEY, "REAL_KEY": REAL_KEY, "PATH": "/bin"}
    env = agent_env(target.agent, Path("mcp.json"), environ, ("http://127.0.0.1:5/v1", "tok"))
    assert env["OPENAI_BASE_URL"] == env["FARM_MODEL_URL"] == "http://127.0.0.1:5/v1"
    assert env["OPENAI_API_KEY"] == "tok"
    assert REAL_KEY not in env.values()


@pytest.mark.parametrize(
    ("agent", "field", "problem"),
    [
        (
            {"model_via": {"endpoint": "http://h/v1", "api_key": "sk-abc"}},
            "models[0].agent.model_via",
            "would store a secret",
        ),
        (
            {"model_via": {"endpoint": "http://h/v1", "api_key_env": "sk-abc"}},
            "models[0].agent.model_via",
            "name of an environment variable",
        ),
        ({"model_via": {"endpoint": "h/v1"}}, "models[0].agent.model_via.endpoint", "pattern"),
        ({"model_via": "gpt"}, "models[0].agent.model_via", "valid dictionary"),
        ({"command": ["a", "{model_url}"]}, "models[0].agent", "needs `model_via`"),
    ],
)
def test_a_bad_model_via_is_refused_naming_the_file_and_the_field(
    agent: dict[str, Any], field: str, problem: str, tmp_path: Path
) -> None:
    target = {"id": "a", "adapter": "agent", "model": "a", "agent": {"command": ["a"], **agent}}
    path = tmp_path / "sweep.yaml"
    path.write_text(json.dumps({"name": "s", "models": [target], "prompts": ["p"]}))
    with pytest.raises(SpecError) as caught:
        load_sweep(path)
    assert caught.value.source == str(path)
    assert caught.value.field == field
    assert problem in caught.value.problem
    assert "sk-abc" not in str(caught.value)


def test_a_model_via_key_variable_the_worker_lacks_is_the_farms_infra_error(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("UNSET_MODEL_KEY", raising=False)
    via = {"endpoint": "http://127.0.0.1:9/v1", "api_key_env": "UNSET_MODEL_KEY"}
    spec = trial(SCENARIO, []).model_copy(
        update={"model": _agent_target(command=REFERENCE, model_via=via)}
    )
    result = anyio.run(execute_trial, spec, settings)
    assert result.outcome == "infra_error"
    assert "UNSET_MODEL_KEY" in result.detail


def test_an_agent_failed_by_its_model_endpoint_is_an_infra_error_naming_it(
    settings: Settings,
) -> None:
    with fake_openai(Behaviour(models=["stub"], chat_status=500)) as fake:
        target = _agent_target(command=REFERENCE, model_via={"endpoint": fake.url})
        spec = trial(SCENARIO, []).model_copy(update={"model": target})
        result = anyio.run(execute_trial, spec, settings)
    assert result.outcome == "infra_error"
    assert "model endpoint failed its last call (500)" in result.detail
    assert "the model crashed" in result.detail  # what the endpoint said


def test_an_endpoint_echoing_the_workers_key_never_shows_it_to_the_agent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ECHOED_KEY", REAL_KEY)
    with fake_openai(Behaviour(models=["stub"], key=REAL_KEY, echo_auth=True)) as fake:

        async def run() -> str:
            via = ModelVia(endpoint=fake.url, api_key_env="ECHOED_KEY")
            async with (
                passing_through(via) as through,
                httpx.AsyncClient(base_url=through.url) as client,
            ):
                headers = {"Authorization": f"Bearer {through.token}"}
                got = await client.post("/chat/completions", json={"messages": []}, headers=headers)
                return got.text

        said = anyio.run(run)
    assert fake.behaviour.seen_auth == [f"Bearer {REAL_KEY}"]
    assert REAL_KEY not in said and "[masked]" in said
