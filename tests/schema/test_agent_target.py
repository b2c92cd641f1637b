"""An `agent` model target: a command the farm runs as the system under test, parsed strictly."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mcp_farm.schema import ModelTarget


def _agent(**agent: object) -> ModelTarget:
    return ModelTarget.model_validate(
        {"id": "mine", "adapter": "agent", "model": "my-agent", "agent": agent}
    )


def test_an_agent_target_takes_its_command_and_convention() -> None:
    target = _agent(command=["my-agent", "--mcp", "{mcp_config}", "{prompt}"], time_limit_s=30)
    assert target.agent is not None
    assert target.agent.convention == "oneshot"
    assert target.reply_limit_s == 30
    assert target.reply_clock == "wall"


def test_an_unknown_placeholder_in_the_command_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"unknown placeholder \{model\}"):
        _agent(command=["my-agent", "{model}"])


def test_an_unknown_field_is_refused() -> None:
    with pytest.raises(ValidationError, match="timeout"):
        _agent(command=["my-agent"], timeout=3)


def test_the_prompt_placeholder_belongs_to_the_oneshot_convention() -> None:
    with pytest.raises(ValidationError, match="oneshot"):
        _agent(command=["my-agent", "{prompt}"], convention="jsonl")


def test_a_secret_written_into_env_is_refused() -> None:
    with pytest.raises(ValidationError, match="pass_env"):
        _agent(command=["a"], env={"BASE": "https://user:hunter2@example.com/v1"})


def test_the_agent_adapter_needs_its_command_and_no_other_adapter_takes_one() -> None:
    with pytest.raises(ValidationError, match="agent"):
        ModelTarget(id="a", adapter="agent", model="x")
    with pytest.raises(ValidationError, match="agent"):
        ModelTarget.model_validate(
            {
                "id": "a",
                "adapter": "scripted",
                "model": "x",
                "script": [],
                "agent": {"command": ["a"]},
            }
        )


def test_a_model_target_without_an_agent_dumps_as_before() -> None:
    target = ModelTarget(id="m", adapter="local", model="smollm2-135m")
    assert "agent" not in target.model_dump(mode="json")


def test_braces_with_an_argument_pass_as_written_in_code_given_to_an_interpreter() -> None:
    target = _agent(command=["{python}", "-c", "print({k: 1 for k in 'ab'})"])
    assert target.agent is not None
