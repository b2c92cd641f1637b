"""The aggregate task: build a sweep's scorecard and store it, so `farm report` is instant.

Runs on the control queue when a sweep's last trial lands (and at the end of an embedded run).
Idempotent: building twice stores one card (the newer).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy.engine import Engine

from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.schema import Settings
from mcp_farm.schema.db import (
    ScorecardRow,
    make_engine,
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


def scorecard_of(*, engine: Engine, sweep_id: str, rebuild: bool = False) -> Scorecard:
    """The stored card, or one built (and stored) now when there is none or it is stale."""
    card = None if rebuild else stored_scorecard(engine=engine, sweep_id=sweep_id)
    if card is None:
        card = build_scorecard(engine=engine, sweep_id=sweep_id)
        store_scorecard(engine=engine, card=card)
    return card


def aggregate(payload: dict[str, Any], settings: Settings, **_options: Any) -> dict[str, Any]:
    """Task `farm.aggregate`: build and store the scorecard of `payload["sweep_id"]`."""
    engine = make_engine(settings.resolved_database_url())
    try:
        card = build_scorecard(engine=engine, sweep_id=payload["sweep_id"])
        store_scorecard(engine=engine, card=card)
    finally:
        engine.dispose()
    return {"sweep_id": card.sweep_id, "done": card.done, "total": card.total}
