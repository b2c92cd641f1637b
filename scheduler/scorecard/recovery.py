"""Recovery after an error result, per model × config: of the graded trials in which a call
failed (an error result, a server's `error_pattern`, arguments the server refused), how many
went on to a successful call that did a step (docs/conversations.md, "Recovery after an
error"). Each trial's verdict is the worker's (`trial.recovered`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_farm.scheduler.scorecard.queries.conversations import recovery_counts

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection


def recovery(conn: Connection, sweep_id: str, skip_left: bool) -> dict[tuple[str, str], list[int]]:
    """Per (model, config): [trials with a failed call, those that recovered]."""
    return {
        (r.model_id, r.config): [int(r.errored), int(r.recovered or 0)]
        for r in recovery_counts(conn, sweep_id, skip_left)
    }
