"""The conversation part of a scorecard: turn and conversation pass rates per config, and the
turn at which failed conversations first failed, read from the trials' stored turns."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import TYPE_CHECKING

from mcp_farm.scheduler.scorecard.queries.conversations import conversation_trials
from mcp_farm.schema.scorecard import Conversations

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def conversations(conn: Connection, sweep_id: str, skip_left: bool) -> list[Conversations]:
    """One entry per model × config that ran conversations, in model and config order."""
    tallies: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    firsts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for model, config, outcome, turns_json in conversation_trials(conn, sweep_id, skip_left):
        turns = json.loads(turns_json)
        tally = tallies[(model, config)]
        tally[0] += 1
        tally[1] += outcome == "pass"
        tally[2] += len(turns)
        tally[3] += sum(t.get("outcome") == "pass" for t in turns)
        failed = [t["index"] for t in turns if t.get("outcome") != "pass"]
        if failed:
            firsts[(model, config)][str(failed[0] + 1)] += 1
    return [
        Conversations(
            model=model,
            prompt=config,
            conversations=n,
            passed=passed,
            rate=passed / n if n else None,
            turns=turns,
            turns_passed=turns_passed,
            turn_rate=turns_passed / turns if turns else None,
            first_failing_turn=dict(
                sorted(firsts[(model, config)].items(), key=lambda i: int(i[0]))
            ),
        )
        for (model, config), (n, passed, turns, turns_passed) in sorted(tallies.items())
    ]
