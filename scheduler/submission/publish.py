"""Publishing trials to the broker, many at a time.

Celery's `send_task` costs about a millisecond per message here, so 100,000 trials would take
minutes. Trials are therefore published in pipelined batches: each message is built in Celery's
task protocol (version 2, the headers taken from Celery itself once per batch) in the envelope
kombu's Redis transport uses, and pushed with one round trip per thousand messages. Workers
consume them as ordinary Celery tasks; the integration tests hold that.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable
from typing import Any

import redis
from celery import Celery
from pydantic import BaseModel

from mcp_farm.schema import (
    FarmError,
    TrialSpec,
    mask_url,
)

TASK = "farm.run_trial"
EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
BATCH = 1000


def readable(trial: TrialSpec) -> str:
    """How a trial shows in Flower instead of its whole payload."""
    return f"{trial.model.id} · {trial.prompt.id} · {trial.scenario.id} #{trial.repetition}"


def _template(app: Celery) -> dict[str, Any]:
    message = app.amqp.as_task_v2("template", TASK, args=[{}], kwargs={})
    return dict(message.headers)


def _envelope(headers: dict[str, Any], trial: TrialSpec, queue: str) -> str:
    task_id = trial.trial_id
    body = json.dumps([[trial.model_dump(mode="json")], {}, EMBED])
    return json.dumps(
        {
            "body": base64.b64encode(body.encode("utf-8")).decode("ascii"),
            "content-encoding": "utf-8",
            "content-type": "application/json",
            "headers": headers | {"id": task_id, "root_id": task_id, "argsrepr": readable(trial)},
            "properties": {
                "correlation_id": task_id,
                "delivery_mode": 2,
                "delivery_info": {"exchange": "", "routing_key": queue},
                "priority": 0,
                "body_encoding": "base64",
                "delivery_tag": str(uuid.uuid4()),
            },
        }
    )


def publish_trials(app: Celery, trials: Iterable[tuple[TrialSpec, str]]) -> int:
    """Publish each (trial, queue) as one `farm.run_trial` task with task_id = trial_id."""
    declared = set(app.amqp.queues)
    headers = _template(app)
    client = redis.Redis.from_url(app.conf.broker_url)
    sent = 0
    try:
        pipe = client.pipeline(transaction=False)
        for trial, queue in trials:
            if queue not in declared:
                raise FarmError(f"queue {queue!r} is not declared; nothing more was published")
            pipe.lpush(queue, _envelope(headers, trial, queue))
            sent += 1
            if sent % BATCH == 0:
                pipe.execute()
        pipe.execute()
    except redis.RedisError as exc:
        raise FarmError(
            f"the broker at {mask_url(app.conf.broker_url)} refused the trials ({exc}); "
            f"{sent} were queued. Start Redis (or set FARM_BROKER_URL), then `farm sweep resume` "
            "the sweep"
        ) from None
    finally:
        client.close()
    return sent


def publish_tasks(app: Celery, task: str, payloads: Iterable[BaseModel], queue: str) -> int:
    """Send one `task` per payload to `queue`, one at a time (for the few hundred messages of a
    rescore; trials go through `publish_trials`). Returns how many were sent."""
    sent = 0
    for payload in payloads:
        app.send_task(task, args=[payload.model_dump(mode="json")], queue=queue)
        sent += 1
    return sent
