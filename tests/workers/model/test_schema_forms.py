"""A reply held to a JSON schema is asked for in OpenAI's `json_schema` form; an endpoint that
refuses that form (llama-cpp-python's server answers 500, naming `response_format`) is asked again in the `json_object`
form it takes, and asked that way from then on."""

from __future__ import annotations

import json

import anyio
import pytest

from mcp_farm.schema import ModelTarget, PromptConfig
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.model.openai import OpenAIClient
from mcp_farm.workers.model.toolspec import Sampling, ToolSpec
from tests.fake_openai import Behaviour, fake_openai

VERDICT = {"type": "object", "properties": {"score": {"type": "integer"}}}
TOOL = ToolSpec("read_file", "fs", "read_file", "Read a file.", {"type": "object"})
GRAMMAR = PromptConfig(id="g", version=1, mode="grammar", system_prompt="Reply in JSON.")


def client(url: str) -> OpenAIClient:
    return OpenAIClient(ModelTarget(id="m", adapter="openai", model="m", endpoint=url))


def judge(url: str) -> str:
    reply = anyio.run(
        client(url).complete_json,
        [{"role": "user", "content": "score it"}],
        VERDICT,
        Sampling(temperature=0.0, max_tokens=32, seed=1),
    )
    return reply.text


def test_an_endpoint_that_takes_json_schema_is_asked_once() -> None:
    answer = json.dumps({"score": 3})
    with fake_openai(Behaviour(models=["m"], answer=answer)) as endpoint:
        assert json.loads(judge(endpoint.url)) == {"score": 3}
        assert endpoint.behaviour.seen_formats == ["json_schema"]


def test_an_endpoint_that_refuses_json_schema_is_asked_with_json_object_from_then_on() -> None:
    answer = json.dumps({"score": 2})
    behaviour = Behaviour(models=["m"], answer=answer, refuse_json_schema=True)
    with fake_openai(behaviour) as endpoint:
        assert json.loads(judge(endpoint.url)) == {"score": 2}
        assert json.loads(judge(endpoint.url)) == {"score": 2}
        reply = anyio.run(client(endpoint.url).complete, [], [TOOL], GRAMMAR, 1)
        assert behaviour.seen_formats == [
            "json_schema",
            "json_object",
            "json_object",
            "json_object",
        ]
        assert reply.tokens.prompt == 12


def test_a_refusal_for_another_reason_is_still_an_error() -> None:
    behaviour = Behaviour(models=["m"], chat_status=422)
    with fake_openai(behaviour) as endpoint:
        with pytest.raises(InfraError, match="422"):
            judge(endpoint.url)
        assert behaviour.seen_formats == ["json_schema"]  # asked once: not about the form
