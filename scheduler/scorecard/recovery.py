"""Recovery after an error result: per model × config, of the trials in which a call failed
(an error result, a server's `error_pattern`, an input the server refused), how many went on
to call that tool again successfully (docs/conversations.md, "Recovery after an error")."""

from __future__ import annotations

from collections import defaultdict
from itertools import groupby
from typing import TYPE_CHECKING, Any

from mcp_farm.scheduler.scorecard.queries.tool_calls import errored_trial_calls

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def recovered(calls: list[tuple[str, bool]]) -> bool:
    """Whether every failed call of a trial, given as (tool, ok) in call order, was followed
    later by a successful call of the same tool: the step it tried was done after all."""
    for i, (tool, ok) in enumerate(calls):
        if not ok and not any(later_ok for t, later_ok in calls[i + 1 :] if t == tool):
            return False
    return True


def recovery(conn: Connection, sweep_id: str, skip_left: bool) -> dict[tuple[str, str], list[int]]:
    """Per (model, config): [trials with a failed call, those that recovered]."""
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    rows: list[Any] = errored_trial_calls(conn, sweep_id, skip_left)
    for _trial, group in groupby(rows, key=lambda r: r.trial_id):
        calls = list(group)
        counts = tally[(calls[0].model_id, calls[0].prompt_id)]
        counts[0] += 1
        counts[1] += recovered([(c.tool, bool(c.ok)) for c in calls])
    return dict(tally)
