"""The `replay` adapter gives the recorded model's turns, and only those: a prompt config's
few-shot examples are not turns of the model, and a recording that ended without a last turn
(the model's time limit) ends its replay the same way, never with an empty answer."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio

from mcp_farm.scenarios import load_prompt, load_suite
from mcp_farm.scheduler.submission.replay import ending, turns
from mcp_farm.schema import FewShot, ModelTarget, Settings, TrialResult, TrialSpec
from mcp_farm.workers.trial import execute_trial
from tests.helpers import trial
from tests.scheduler.cli.test_replay import suite

SCRIPT: list[dict[str, Any]] = [
    {"call": {"name": "get_order", "arguments": {"order_id": "7"}}},
    {"call": {"name": "cancel_order", "arguments": {"order_id": "7"}}},
    {"answer": "Order 7 (total 120) is cancelled."},
]
FEW_SHOT = [
    FewShot(user="What is 2 + 2?", assistant="4"),
    FewShot(user="Say hello.", assistant="Hello."),
]


def orders_suite(folder: Path) -> str:
    return str(suite(folder, 1))


def recorded_and_replayed(
    tmp_path: Path, script: list[dict[str, Any]], **model: Any
) -> tuple[TrialResult, TrialResult]:
    """Run `script` as a scripted model with a few-shot prompt config, then replay its
    transcript as `farm replay` plans it (turns and ending from the stored row)."""
    suite = orders_suite(tmp_path)
    settings = Settings(data_dir=tmp_path / "data", server_start_timeout_s=20.0)
    prompt = load_prompt("native").model_copy(update={"few_shot": FEW_SHOT})
    spec = trial(load_suite(suite).scenarios[0], script, suite=suite, prompt=prompt)
    spec = spec.model_copy(update={"model": spec.model.model_copy(update=model)})
    recorded = anyio.run(execute_trial, spec, settings)
    # As the store keeps them: the transcript as JSON, the stop reason and detail as columns.
    row = SimpleNamespace(
        transcript_json=json.dumps([m.model_dump(mode="json") for m in recorded.transcript]),
        stop_reason=recorded.stop_reason,
        detail=recorded.detail,
    )
    target = ModelTarget(
        id="scripted",
        adapter="replay",
        model="source-sweep",
        script=[*turns(row.transcript_json), ending(row)],
    )
    replay = TrialSpec.model_validate(
        spec.model_dump() | {"model": target.model_dump(), "trial_id": "", "sweep_id": "r"}
    )
    return recorded, anyio.run(execute_trial, replay, settings)


def test_few_shot_examples_in_the_recording_are_not_replayed_as_the_models_turns(
    tmp_path: Path,
) -> None:
    recorded, replayed = recorded_and_replayed(tmp_path, SCRIPT)
    assert [m.content for m in recorded.transcript if m.role == "assistant"][:2] == ["4", "Hello."]
    assert recorded.outcome == "pass", recorded.detail
    assert replayed.outcome == "pass", replayed.detail
    assert [(c.tool, c.arguments) for c in replayed.tool_calls] == [
        (c.tool, c.arguments) for c in recorded.tool_calls
    ]
    assert replayed.final_answer == recorded.final_answer
    # The replay's own transcript opens with the same examples, once.
    assert [m.content for m in replayed.transcript if m.role == "assistant"][:2] == ["4", "Hello."]


def test_a_recording_stopped_by_the_models_time_limit_replays_to_the_same_stop(
    tmp_path: Path,
) -> None:
    hung = [SCRIPT[0], {**SCRIPT[1], "think_s": 30}]  # the second reply never comes in time
    recorded, replayed = recorded_and_replayed(tmp_path, hung, request_timeout_s=0.3)
    assert (recorded.stop_reason, recorded.outcome) == ("model_time_limit", "timeout")
    assert (replayed.stop_reason, replayed.outcome) == ("model_time_limit", "timeout")
    assert replayed.final_answer is None  # not an empty answer in the missing turn's place
    assert replayed.detail.startswith("the recording ends here (model_time_limit): ")
    assert "gave no reply within 0.3 s" in replayed.detail
    assert [c.tool for c in replayed.tool_calls] == ["get_order"]


def test_a_replay_target_takes_no_endpoint_slot() -> None:
    from mcp_farm.workers.node.slots import slot_key

    target = ModelTarget(id="m", adapter="replay", model="source-sweep", script=[])
    assert slot_key(target) is None
