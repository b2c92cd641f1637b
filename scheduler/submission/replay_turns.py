"""What a replay changed in a conversation, turn by turn: which turn each changed call belongs
to, the farm's own calls of a continued turn compared like the model's, and turns whose own
verdict changed or that were not sent (docs/replay.md, "Conversations")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcp_farm.scheduler.submission.queries import RecordedCall

NOT_SENT = "not sent"
"""A turn's verdict where the conversation ended before it (a failed turn under `stop`)."""


@dataclass(frozen=True)
class TurnChange:
    turn: int
    """1-based, as reports name turns."""
    before: str
    after: str


def stored_turns(row: Any) -> list[dict[str, Any]]:
    """A trial row's turns (`turns_json`); empty for a one-prompt trial or an older row."""
    found = json.loads(getattr(row, "turns_json", None) or "[]")
    return [t for t in found if isinstance(t, dict)]


def turn_of_calls(turns: list[dict[str, Any]]) -> dict[int, int]:
    """Call index (in the trial's calls) → its turn, 1-based."""
    found: dict[int, int] = {}
    for t in turns:
        first = int(t.get("first_call", 0))
        for i in range(first, first + int(t.get("call_count", 0))):
            found[i] = int(t.get("index", 0)) + 1
    return found


def farm_calls(turn: dict[str, Any]) -> tuple[list[RecordedCall], list[str]]:
    """A turn's farm calls as replay compares calls, and the results the model was shown."""
    calls = turn.get("farm_calls") or []
    recorded = [
        RecordedCall(
            str(c.get("tool", "")),
            bool(c.get("ok")),
            str(c.get("error") or ""),
            c.get("server"),
            str(c.get("result_digest") or ""),
            str(c.get("whole_json") or ""),
        )
        for c in calls
    ]
    return recorded, [str(c.get("result_text") or "") for c in calls]


def turn_changes(was: list[dict[str, Any]], now: list[dict[str, Any]]) -> list[TurnChange]:
    """Turns whose own verdict differs, a turn no longer sent (or sent only now) included."""
    before = {int(t.get("index", 0)): str(t.get("outcome") or "") for t in was}
    after = {int(t.get("index", 0)): str(t.get("outcome") or "") for t in now}
    return [
        TurnChange(i + 1, before.get(i, NOT_SENT), after.get(i, NOT_SENT))
        for i in sorted(before.keys() | after.keys())
        if before.get(i, NOT_SENT) != after.get(i, NOT_SENT)
    ]
