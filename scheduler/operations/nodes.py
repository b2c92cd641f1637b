"""The worker nodes that enrolled, how alive they are and how much they ran."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from sqlmodel import col

from mcp_farm.scheduler.operations.progress import as_utc
from mcp_farm.schema.db import (
    NodeRow,
    TrialRow,
    session_scope,
)
from mcp_farm.schema.settings import STALE_AFTER_BEATS


@dataclass(frozen=True)
class NodeView:
    name: str
    host: str
    tags: list[str]
    models: list[str]
    concurrency: int
    heartbeat_age_s: float
    state: str
    """`up`, `stale` (no heartbeat for three intervals) or `stopped`."""
    trials_done: int


def list_nodes(*, engine: Engine, heartbeat_s: float) -> list[NodeView]:
    now = datetime.now(UTC)
    with session_scope(engine) as session:
        done = dict(
            session.execute(
                select(col(TrialRow.node), func.count())
                .where(col(TrialRow.status) == "done", col(TrialRow.node).is_not(None))
                .group_by(col(TrialRow.node))
            ).all()
        )
        nodes = session.execute(select(NodeRow).order_by(col(NodeRow.name))).scalars().all()
        views = []
        for node in nodes:
            age = (now - as_utc(node.last_heartbeat)).total_seconds()
            if node.stopped_at is not None:
                state = "stopped"
            elif age > STALE_AFTER_BEATS * heartbeat_s:
                state = "stale"
            else:
                state = "up"
            views.append(
                NodeView(
                    name=node.name,
                    host=node.host,
                    tags=json.loads(node.tags_json),
                    models=json.loads(node.models_json),
                    concurrency=node.concurrency,
                    heartbeat_age_s=age,
                    state=state,
                    trials_done=int(done.get(node.name, 0)),
                )
            )
    return views
