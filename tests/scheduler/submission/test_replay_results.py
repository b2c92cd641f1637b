"""What replay compares of one call's result: the whole text, the structured content, a change
that only the digest of the whole text shows, and the ignore rules."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace
from typing import Any

from mcp_farm.scheduler.submission.queries import RecordedCall
from mcp_farm.scheduler.submission.replay_changes import changes
from mcp_farm.schema import IgnoreRules

KEY = ("m", "native", "s", "", 0, 0)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def trial(trial_id: str, shown: str) -> SimpleNamespace:
    transcript = [{"role": "user", "content": "go"}, {"role": "tool", "content": shown}]
    return SimpleNamespace(
        trial_id=trial_id,
        model_id="m",
        prompt_id="native",
        scenario_id="s",
        toolset="",
        repetition=0,
        variant=0,
        outcome="pass",
        transcript_json=json.dumps(transcript),
    )


def call(text: str, whole: dict[str, Any] | None) -> RecordedCall:
    stored = "" if whole is None else json.dumps(whole)
    return RecordedCall("get", True, "", "srv", sha(text), stored)


def cut(text: str) -> str:
    return f"{text[:4000]}\n[result cut: {len(text) - 4000} more characters not shown]"


def compared(
    was: tuple[str, str, RecordedCall], now: tuple[str, str, RecordedCall], rules: Any = None
) -> list[Any]:
    found = changes(
        [trial("a", was[1])],
        [trial("b", now[1])],
        {"a": [was[2]]},
        {"b": [now[2]]},
        {KEY: {"srv": rules}} if rules else None,
    )
    return [c for t in found for c in t.calls]


def test_a_change_past_the_shown_text_is_found_in_the_whole_text_and_shown() -> None:
    first, second = "x" * 4500 + "first", "x" * 4500 + "second"
    [change] = compared(
        (first, cut(first), call(first, {"text": first})),
        (second, cut(second), call(second, {"text": second})),
    )
    assert change.kind == "result changed"
    assert any("first" in line for line in change.diff)
    assert any("second" in line for line in change.diff)


def test_a_call_stored_before_whole_results_differs_by_its_digest_past_the_shown_text() -> None:
    first, second = "x" * 4500 + "first", "x" * 4500 + "second"
    [change] = compared(
        (first, cut(first), call(first, None)),  # recorded before schema version 11
        (second, cut(second), call(second, {"text": second})),
    )
    assert change.kind == "result changed past the stored text"
    same = "x" * 4500 + "first"
    assert (
        compared(
            (first, cut(first), call(first, None)), (same, cut(same), call(same, {"text": same}))
        )
        == []
    )


def test_a_change_only_in_the_structured_content_is_shown() -> None:
    text = '{"total": 120}'
    was = {"structured": {"total": 120}, "structured_digest": "1"}
    now = {"structured": {"total": 120, "note": "new"}, "structured_digest": "2"}
    [change] = compared((text, text, call(text, was)), (text, text, call(text, now)))
    assert change.kind == "structured content changed"
    assert '+  "note": "new",' in change.diff


def test_ignore_rules_hide_values_that_always_change_in_text_and_structured_content() -> None:
    rules = IgnoreRules(paths=["$.at"], patterns=["req-[0-9a-f]{4}"])
    one = json.dumps({"at": "10:00", "id": "req-aaaa", "total": 1})
    two = json.dumps({"at": "10:01", "id": "req-bbbb", "total": 1})
    was = {"structured": json.loads(one), "structured_digest": "1"}
    now = {"structured": json.loads(two), "structured_digest": "2"}
    assert compared((one, one, call(one, was)), (two, two, call(two, now)), rules) == []
    changed = json.dumps({"at": "10:01", "id": "req-bbbb", "total": 2})
    [change] = compared((one, one, call(one, was)), (changed, changed, call(changed, now)), rules)
    assert change.kind == "result changed"
    assert '-  "total": 1' in change.diff and '+  "total": 2' in change.diff
    assert not any("10:0" in line or "req-" in line for line in change.diff)
