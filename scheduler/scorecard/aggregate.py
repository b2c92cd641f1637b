"""The aggregate task: build a sweep's scorecard and store it, so `farm report` is instant.

Runs on the control queue when a sweep's last trial lands (and at the end of an embedded run).
Idempotent: building twice stores one card (the newer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_farm.scheduler.scorecard.answers import current_anchors
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.queries.stored import (
    store_scorecard,
    stored_scorecard,
)
from mcp_farm.schema import Settings
from mcp_farm.schema.db import make_engine
from mcp_farm.schema.tasks.messages import AggregateRequest, AggregateResult, read_message

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from mcp_farm.schema.scorecard import Scorecard


def scorecard_of(*, engine: Engine, sweep_id: str, rebuild: bool = False) -> Scorecard:
    """The stored card, or one built (and stored) now when there is none or it is stale. The
    anchor verdicts are always read now: a gate run after the card was built counts."""
    card = None if rebuild else stored_scorecard(engine=engine, sweep_id=sweep_id)
    if card is None:
        card = build_scorecard(engine=engine, sweep_id=sweep_id)
        store_scorecard(engine=engine, card=card)
    if card.answers is None:
        return card
    with engine.connect() as conn:
        answers = current_anchors(conn, sweep_id, card.answers)
    return card.model_copy(update={"answers": answers})


def aggregate(
    payload: AggregateRequest | dict[str, Any], settings: Settings, **_options: Any
) -> AggregateResult:
    """Task `farm.aggregate`: build and store the scorecard of the request's sweep."""
    request = read_message("farm.aggregate", payload, AggregateRequest)
    engine = make_engine(settings.resolved_database_url())
    try:
        card = build_scorecard(engine=engine, sweep_id=request.sweep_id)
        store_scorecard(engine=engine, card=card)
    finally:
        engine.dispose()
    return AggregateResult(sweep_id=card.sweep_id, done=card.done, total=card.total)
