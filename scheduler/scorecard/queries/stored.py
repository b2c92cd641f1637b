"""Built scorecards kept in the database, one per sweep, so a report needs no rebuild."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import ValidationError
from sqlalchemy.engine import Engine

from mcp_farm.schema.db import (
    ScorecardRow,
    session_scope,
    upsert,
)
from mcp_farm.schema.scorecard import (
    SCORECARD_VERSION,
    Scorecard,
)


def store_scorecard(*, engine: Engine, card: Scorecard) -> None:
    values = {
        "sweep_id": card.sweep_id,
        "version": SCORECARD_VERSION,
        "built_at": datetime.now(UTC),
        "trials_done": card.done,
        "card_json": card.model_dump_json(),
    }
    stmt = upsert(engine, ScorecardRow, values, "sweep_id")
    with session_scope(engine) as session:
        session.execute(stmt)


def stored_scorecard(*, engine: Engine, sweep_id: str) -> Scorecard | None:
    """The stored card of a sweep, if one was built with this format version."""
    with session_scope(engine) as session:
        row = session.get(ScorecardRow, sweep_id)
        if row is None or row.version != SCORECARD_VERSION:
            return None
        try:
            return Scorecard.model_validate_json(row.card_json)
        except ValidationError:
            return None
