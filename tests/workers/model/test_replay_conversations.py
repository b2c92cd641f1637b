"""A replayed conversation re-sends each turn's calls in order on the same sessions: after a
turn the farm continued from (its own expected calls in the model's place), the next turn's
recorded replies are given at their place, and a turn whose tool list changes gets its trigger
before its calls, so the server is in the recorded state."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from mcp_farm.scenarios import load_prompt, load_suite
from mcp_farm.scheduler.submission.replay import ending, turns
from mcp_farm.schema import FewShot, ModelTarget, Settings, TrialResult, TrialSpec
from mcp_farm.workers.trial import execute_trial
from tests.helpers import ideal_script, trial

pytestmark = pytest.mark.integration

BY_ID = {s.id: s for s in load_suite("conversations").scenarios}
FEW_SHOT = [FewShot(user="What is 2 + 2?", assistant="4")]


def row_of(result: TrialResult) -> SimpleNamespace:
    """The columns a replay reads, as the store keeps them."""
    return SimpleNamespace(
        transcript_json=json.dumps([m.model_dump(mode="json") for m in result.transcript]),
        turns_json=json.dumps([t.model_dump(mode="json") for t in result.turn_results]),
        stop_reason=result.stop_reason,
        detail=result.detail,
    )


def recorded_and_replayed(
    tmp_path: Path, scenario_id: str, script: list[dict[str, Any]]
) -> tuple[TrialResult, TrialResult]:
    """Run `script` on a conversation (with a few-shot prompt config, whose examples are no
    turns of the model), then replay it as `farm replay` plans it."""
    settings = Settings(data_dir=tmp_path / "data", server_start_timeout_s=30.0)
    prompt = load_prompt("native").model_copy(update={"few_shot": FEW_SHOT})
    spec = trial(BY_ID[scenario_id], script, suite="conversations", prompt=prompt)
    recorded = anyio.run(execute_trial, spec, settings)
    row = row_of(recorded)
    target = ModelTarget(
        id="scripted",
        adapter="replay",
        model="source-sweep",
        script=[*turns(row.transcript_json, row.turns_json), ending(row)],
    )
    replay = TrialSpec.model_validate(
        spec.model_dump() | {"model": target.model_dump(), "trial_id": "", "sweep_id": "r"}
    )
    return recorded, anyio.run(execute_trial, replay, settings)


def calls(result: TrialResult) -> list[tuple[str, dict[str, Any], bool]]:
    return [(c.tool, c.arguments, c.ok) for c in result.tool_calls]


def turn_view(result: TrialResult) -> list[tuple[str, int, int, list[str]]]:
    return [
        (t.outcome, t.first_call, t.call_count, [c.tool for c in t.farm_calls])
        for t in result.turn_results
    ]


def test_a_continued_conversation_replays_each_turns_calls_at_their_place(
    tmp_path: Path,
) -> None:
    scenario = BY_ID["conv.groceries-two-adds"]
    # Turn 1 reads the note and gives up (the farm then appends the eggs itself); turn 2 is
    # the ideal agent's. A replay that lost its place would give turn 1's leftovers to turn 2.
    first = [
        {"call": {"name": "read_note", "arguments": {"note_id": "groceries"}}},
        {"answer": "I can't do that."},
    ]
    script = [*first, *ideal_script(scenario.turn_scenario(1))]
    recorded, replayed = recorded_and_replayed(tmp_path, scenario.id, script)
    (failed, *rest), passed = turn_view(recorded)
    assert failed != "pass" and rest == [0, 1, ["append_to_note"]]
    assert passed == ("pass", 1, 1, [])
    assert turn_view(replayed) == turn_view(recorded), replayed.detail
    assert calls(replayed) == calls(recorded)
    assert [t.answer for t in replayed.turn_results] == [t.answer for t in recorded.turn_results]
    farm_results = [c.result_text for t in replayed.turn_results for c in t.farm_calls]
    assert farm_results == [c.result_text for t in recorded.turn_results for c in t.farm_calls]


def test_a_conversation_whose_tool_list_changes_replays_its_trigger_before_the_turns_calls(
    tmp_path: Path,
) -> None:
    scenario = BY_ID["conv.workspace-archive-after-upgrade"]
    recorded, replayed = recorded_and_replayed(tmp_path, scenario.id, ideal_script(scenario))
    assert recorded.outcome == "pass", recorded.detail
    assert replayed.outcome == "pass", replayed.detail
    assert calls(replayed) == calls(recorded)
    assert [c[0] for c in calls(replayed)] == ["list_tasks", "archive_task"]
    assert replayed.turn_results[1].tools_added == ["archive_task", "assign_task", "export_tasks"]
    assert turn_view(replayed) == turn_view(recorded)


def test_a_replayed_conversation_gives_no_reply_of_one_turn_in_another() -> None:
    """The script of a conversation holds each reply's turn, from the stored transcript."""
    transcript = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "name": "x"}]},
        {"role": "tool", "content": "r", "tool_call_id": "a"},
        {"role": "assistant", "content": "gave up"},
        {
            "role": "assistant",
            "content": "",
            "farm": True,
            "tool_calls": [{"id": "f", "name": "y"}],
        },
        {"role": "tool", "content": "r", "tool_call_id": "f", "farm": True},
        {"role": "assistant", "content": "expected", "farm": True},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "done"},
    ]
    script = turns(json.dumps(transcript), json.dumps([{}, {}]))
    assert [(t["turn"], t["text"]) for t in script] == [(0, ""), (0, "gave up"), (1, "done")]
    assert "turn" not in turns(json.dumps(transcript))[0]  # a one-prompt trial's, as before
