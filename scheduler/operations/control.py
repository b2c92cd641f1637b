"""Cancelling and resuming a distributed sweep.

Cancelling marks the sweep and its not-yet-run trials `cancelled` in the database; a worker that
takes one of their messages checks first and skips it, so nothing recorded is touched and the
queue drains quickly. (Celery's own revoke is not used: workers keep revoked ids in memory, so a
later resume of the same trial ids would be silently dropped.) Resuming re-publishes exactly
the trials that still need a run and have no message left in the broker: pending, cancelled and
infra_error ones, and running ones whose worker died (see scheduler/operations/recovery.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import redis

from mcp_farm.scheduler.operations.queries import (
    Reopened,
    cancel_pending,
    lapsed_trials,
    reopen_sweep,
)
from mcp_farm.scheduler.operations.recovery import (
    Held,
    broker_holdings,
    requeue_lapsed,
)
from mcp_farm.scheduler.submission.publish import publish_trials
from mcp_farm.schema import (
    FarmError,
    Settings,
    TrialSpec,
)

if TYPE_CHECKING:
    from celery import Celery
    from sqlalchemy.engine import Engine


def cancel(*, engine: Engine, sweep_id: str) -> int:
    """Cancel what has not run yet; returns how many trials were cancelled."""
    return cancel_pending(engine=engine, sweep_id=sweep_id)


@dataclass(frozen=True)
class Resumed:
    published: int
    """Trials published anew (their messages were gone from the broker)."""
    still_queued: int
    """Trials left alone: their message still waits in the broker."""
    requeued: int
    """`running` trials whose worker stopped renewing their lease, given back to the queue."""


def resume(*, engine: Engine, app: Celery, sweep_id: str, settings: Settings) -> Resumed:
    """Re-publish what the sweep still needs: pending, cancelled and infra_error trials whose
    message the broker no longer holds, and running trials whose worker is gone."""

    def refuse(rows: Reopened) -> None:
        # Refuse before changing anything: a sweep run embedded has no queue to go back to.
        undeclared = sorted({queue for _id, _payload, queue in rows} - set(app.amqp.queues))
        if undeclared:
            raise FarmError(
                f"sweep {sweep_id} has trials for queue(s) {', '.join(undeclared)}, which the "
                "broker does not have: an embedded sweep is resumed with `farm run SWEEP.yaml`; "
                "otherwise declare the tag in FARM_HARDWARE_TAGS"
            )

    rows = reopen_sweep(engine=engine, sweep_id=sweep_id, refuse=refuse)
    held = _holdings(app, {queue for _id, _payload, queue in rows})
    todo = [
        (TrialSpec.model_validate_json(payload), queue)
        for trial_id, payload, queue in rows
        if not held.has(trial_id)
    ]
    published = publish_trials(app, todo)
    stale_before = datetime.now(UTC) - timedelta(seconds=settings.stale_after_s())
    lapsed = lapsed_trials(engine=engine, stale_before=stale_before, sweep_id=sweep_id)
    requeued = requeue_lapsed(engine=engine, app=app, lapsed=lapsed)
    return Resumed(published, len(rows) - len(todo), requeued)


def _holdings(app: Celery, queues: set[str]) -> Held:
    client = redis.Redis.from_url(app.conf.broker_url)
    try:
        return broker_holdings(client, sorted(queues))
    except redis.RedisError as exc:
        raise FarmError(
            f"cannot read the broker's queues ({exc}): start Redis (or set FARM_BROKER_URL), "
            "then resume again; nothing was published"
        ) from None
    finally:
        client.close()
