"""What `farm replay` lists for a probe: once per probe, its verdict's change carrying the diff,
and the diff of the part its `at:` judges, not of the whole value read (issue 43, item 6)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from mcp_farm.scheduler.submission.replay_changes import line_diff
from mcp_farm.scheduler.submission.replay_state import probe_changes, probe_paths
from mcp_farm.schema import IgnoreRules, Scenario

SCENARIO = Scenario.model_validate(
    {
        "id": "s",
        "version": 1,
        "tier": "simple",
        "servers": ["notes"],
        "turns": [
            {
                "user": "one",
                "expect": "none",
                "state": [{"snapshot": True, "at": "a", "expect": 1}],
            },
            {"user": "two", "expect": "none"},
        ],
        "state": [
            {"snapshot": True, "expect": {"any": True}},
            {"snapshot": True, "at": "notes.body", "expect": "x"},
        ],
    }
)


def row(*probes: tuple[int | None, dict[str, Any], str | None]) -> SimpleNamespace:
    found = [
        {"turn": turn, "label": f"p{i}", "kind": "snapshot", "found": json.dumps(value)}
        | {"problem": problem}
        for i, (turn, value, problem) in enumerate(probes)
    ]
    return SimpleNamespace(state_json=json.dumps({"probes": found}))


def test_each_stored_probe_result_is_matched_to_its_probes_at_path() -> None:
    stored = json.loads(row((0, {}, None), (None, {}, None), (None, {}, None)).state_json)["probes"]
    assert probe_paths(SCENARIO, stored) == ["a", None, "notes.body"]


def test_a_change_outside_the_part_at_names_is_not_listed() -> None:
    was = row((0, {"a": 1}, None), (None, {}, None), (None, {"notes": {"body": "x", "n": 1}}, None))
    now = row((0, {"a": 1}, None), (None, {}, None), (None, {"notes": {"body": "x", "n": 2}}, None))
    assert probe_changes(was, now, IgnoreRules(), line_diff, SCENARIO) == []
    # Without the scenario, the whole value is compared (as before).
    whole = probe_changes(was, now, IgnoreRules(), line_diff)
    assert [c.kind for c in whole] == ["found changed"]


def test_a_probe_that_now_passes_is_listed_once_with_its_diff() -> None:
    was = row((0, {"a": 1}, None), (None, {}, None), (None, {"notes": {"body": "y"}}, "not x"))
    now = row((0, {"a": 1}, None), (None, {}, None), (None, {"notes": {"body": "x"}}, None))
    found = probe_changes(was, now, IgnoreRules(), line_diff, SCENARIO)
    assert [(c.label, c.kind) for c in found] == [("p2", "now passes")]
    assert '-"y"' in found[0].diff and '+"x"' in found[0].diff
