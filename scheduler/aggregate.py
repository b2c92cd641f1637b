"""The aggregate task: build a sweep's scorecard and store it, so `farm report` is instant.

Runs on the control queue when a sweep's last trial lands (and at the end of an embedded run).
Idempotent: building twice stores the same card once.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine

from scheduler.scorecard import Cell, Scorecard, build_scorecard
from schema import ScorecardRow, Settings, make_engine, session_scope, upsert

CARD_VERSION = 1


def card_to_json(card: Scorecard) -> str:
    body: dict[str, Any] = {
        "sweep_id": card.sweep_id,
        "total": card.total,
        "done": card.done,
        "configs": [asdict(c) for c in card.configs],
        "by_tool": [asdict(c) for c in card.by_tool],
        "by_tier": [asdict(c) for c in card.by_tier],
        "tool_latency": [asdict(c) for c in card.tool_latency],
        "failures": [
            {"model": m, "prompt": p, "counts": dict(counts)}
            for (m, p), counts in card.failures.items()
        ],
    }
    return json.dumps(body)


def card_from_json(text: str) -> Scorecard:
    body = json.loads(text)

    def cells(name: str) -> list[Cell]:
        return [Cell(**(c | {"key": tuple(c["key"])})) for c in body[name]]

    return Scorecard(
        sweep_id=body["sweep_id"],
        total=body["total"],
        done=body["done"],
        configs=cells("configs"),
        by_tool=cells("by_tool"),
        by_tier=cells("by_tier"),
        tool_latency=cells("tool_latency"),
        failures={(f["model"], f["prompt"]): Counter(f["counts"]) for f in body["failures"]},
    )


def store_scorecard(*, engine: Engine, card: Scorecard) -> None:
    values = {
        "sweep_id": card.sweep_id,
        "version": CARD_VERSION,
        "built_at": datetime.now(UTC),
        "trials_done": card.done,
        "card_json": card_to_json(card),
    }
    stmt = upsert(engine, ScorecardRow, values, "sweep_id")
    with session_scope(engine) as session:
        session.execute(stmt)


def stored_scorecard(*, engine: Engine, sweep_id: str) -> Scorecard | None:
    """The stored card of a sweep, if one was built with this format version."""
    with session_scope(engine) as session:
        row = session.get(ScorecardRow, sweep_id)
        if row is None or row.version != CARD_VERSION:
            return None
        return card_from_json(row.card_json)


def aggregate(payload: dict[str, Any], settings: Settings, **_options: Any) -> dict[str, Any]:
    """Task `farm.aggregate`: build and store the scorecard of `payload["sweep_id"]`."""
    engine = make_engine(settings.resolved_database_url())
    try:
        card = build_scorecard(engine=engine, sweep_id=payload["sweep_id"])
        store_scorecard(engine=engine, card=card)
    finally:
        engine.dispose()
    return {"sweep_id": card.sweep_id, "done": card.done, "total": card.total}
