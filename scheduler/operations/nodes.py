"""The worker nodes that enrolled, how alive they are and how much they ran."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from mcp_farm.scheduler.operations.progress import as_utc
from mcp_farm.scheduler.operations.queries import node_records
from mcp_farm.schema.settings import STALE_AFTER_BEATS

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


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
    views = []
    for node in node_records(engine=engine):
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
                trials_done=node.trials_done,
            )
        )
    return views
