"""Publishing trials to the broker, many at a time.

Celery's `send_task` costs about a millisecond per message here, so 100,000 trials would take
minutes. Trials are therefore published in pipelined batches: each message is built in Celery's
task protocol (version 2, the headers taken from Celery itself once per batch) in the envelope
kombu's Redis transport uses, and pushed with one round trip per thousand messages. Workers
consume them as ordinary Celery tasks; the integration tests hold that. A count of published
trials is always of pushes the broker replied to without an error.
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
from redis.backoff import NoBackoff
from redis.client import Pipeline
from redis.retry import Retry

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
    """Publish each (trial, queue) as one `farm.run_trial` task with task_id = trial_id.

    Returns how many the broker confirmed. When it refuses part way (out of memory, gone), the
    FarmError says how many it had confirmed: each push counts once its reply has come back
    without an error, never when it is merely handed to the pipeline.
    """
    declared = set(app.amqp.queues)
    headers = _template(app)
    # No retries: a batch sent again after a dropped connection could land twice, and what
    # the broker confirmed would no longer be what it holds.
    client = redis.Redis.from_url(app.conf.broker_url, retry=Retry(NoBackoff(), 0))
    confirmed = 0
    try:
        pipe = client.pipeline(transaction=False)
        for trial, queue in trials:
            if queue not in declared:
                raise FarmError(
                    f"queue {queue!r} is not declared; nothing more was published (the broker "
                    f"had confirmed {confirmed} trial(s) before it)"
                )
            pipe.lpush(queue, _envelope(headers, trial, queue))
            if len(pipe) >= BATCH:
                confirmed += _send(pipe, app.conf.broker_url, confirmed)
        confirmed += _send(pipe, app.conf.broker_url, confirmed)
    finally:
        client.close()
    return confirmed


def _send(pipe: Pipeline, url: str, before: int) -> int:
    """Send a batch; how many of its pushes the broker confirmed. FarmError when it refused
    one (or stopped answering), with the count confirmed so far (`before` and this batch)."""
    try:
        replies = pipe.execute(raise_on_error=False)
    except redis.RedisError as exc:  # the connection broke: no reply confirms any push
        raise _refused(url, exc, before) from None
    refused = [r for r in replies if isinstance(r, Exception)]
    accepted = len(replies) - len(refused)
    if refused:
        raise _refused(url, refused[0], before + accepted)
    return accepted


def _refused(url: str, exc: Exception, confirmed: int) -> FarmError:
    return FarmError(
        f"the broker at {mask_url(url)} refused the trials ({exc}); it had confirmed "
        f"{confirmed} of them, which stay queued. Start Redis (or set FARM_BROKER_URL, or free "
        "its memory), then `farm sweep resume` the sweep: it publishes only the rest"
    )


def publish_tasks(app: Celery, task: str, payloads: Iterable[BaseModel], queue: str) -> int:
    """Send one `task` per payload to `queue`, one at a time (for the few hundred messages of a
    rescore; trials go through `publish_trials`). Returns how many were sent."""
    sent = 0
    for payload in payloads:
        app.send_task(task, args=[payload.model_dump(mode="json")], queue=queue)
        sent += 1
    return sent
