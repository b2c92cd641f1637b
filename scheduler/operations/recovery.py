"""Finding trials that lost their worker, and what the broker still holds.

Two questions decide what may be published again without running work twice:
- which `running` trials lost their holder (a lease older than a few heartbeats), and
- which trials still have a message in the broker, waiting in a queue or delivered to a
  worker and not yet acknowledged (kombu's Redis transport keeps those in its `unacked` hash).

A lapsed trial whose message is still unacknowledged gets that very message put back at the
head of its queue (as kombu itself would after the visibility timeout, only sooner); one whose
message is gone is published afresh. Pending trials with a message anywhere are left alone;
one whose message is nowhere (a worker killed the instant Redis handed it the message, before
kombu recorded the delivery as unacknowledged) is published afresh too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import redis

from mcp_farm.scheduler.operations.queries import (
    Lapsed,
    finished_of,
    lapsed_trials,
    pending_counts,
    pending_of_active_sweeps,
    pending_payloads,
    release_lapsed,
)
from mcp_farm.scheduler.submission.publish import publish_trials
from mcp_farm.schema import (
    Settings,
    TrialSpec,
)
from mcp_farm.schema.db import make_engine
from mcp_farm.schema.tasks.broker import make_celery
from mcp_farm.schema.tasks.messages import RequeueRequest, RequeueResult, read_message

if TYPE_CHECKING:
    from celery import Celery
    from sqlalchemy.engine import Engine

UNACKED, UNACKED_INDEX = "unacked", "unacked_index"
PRIORITY_SEP, PRIORITY_STEPS = "\x06\x16", (3, 6, 9)

# Reads each message's task id server-side: a queue of 40,000 trials would otherwise cross
# the wire whole (several KB a message) just to learn 64 characters of each.
_QUEUED_IDS = """
local ids = {}
for _, key in ipairs(KEYS) do
  local n = redis.call('LLEN', key)
  for first = 0, n - 1, 1000 do
    for _, msg in ipairs(redis.call('LRANGE', key, first, first + 999)) do
      local id = string.match(msg, '"id":%s*"([^"]+)"')
      if id then ids[#ids + 1] = id end
    end
  end
end
return ids
"""


# Moves the named messages from the publishing end of a queue to the consuming end (kombu's
# Redis transport pushes on the left and its consumers pop from the right), looking only at the
# newest messages, where the ones just published are.
_TO_FRONT = """
local want = {}
for i = 1, #ARGV do want[ARGV[i]] = true end
local n = math.min(redis.call('LLEN', KEYS[1]), 1000 + 4 * #ARGV)
local moved = 0
for _, msg in ipairs(redis.call('LRANGE', KEYS[1], 0, n - 1)) do
  local id = string.match(msg, '"id":%s*"([^"]+)"')
  if id and want[id] then
    want[id] = nil
    redis.call('LREM', KEYS[1], 1, msg)
    redis.call('RPUSH', KEYS[1], msg)
    moved = moved + 1
  end
end
return moved
"""


@dataclass(frozen=True)
class Held:
    """What the broker holds: task ids waiting in queues, and unacknowledged deliveries."""

    queued: set[str]
    unacked: dict[str, list[bytes | str]]
    """task id → the delivery tags under which it sits unacknowledged."""

    def has(self, trial_id: str) -> bool:
        return trial_id in self.queued or trial_id in self.unacked


def _delivery(raw: Any) -> tuple[str, str] | None:
    """An unacknowledged delivery's task id and the queue it came from (its routing key)."""
    try:
        message, _exchange, routing_key = json.loads(raw)
        found = message["headers"]["id"]
    except (ValueError, TypeError, KeyError):
        return None  # not a Celery message of ours: none of our business
    return (found, routing_key) if isinstance(found, str) else None


def _task_id(raw: Any) -> str | None:
    delivery = _delivery(raw)
    return delivery[0] if delivery else None


def broker_holdings(client: redis.Redis, queues: Iterable[str]) -> Held:
    """Every task id in `queues` (all priority levels) and in the unacknowledged hash."""
    keys = [k for q in queues for k in _queue_keys(q)]
    queued = client.eval(_QUEUED_IDS, len(keys), *keys) if keys else []
    unacked: dict[str, list[bytes | str]] = {}
    for tag, raw in client.hgetall(UNACKED).items():
        task_id = _task_id(raw)
        if task_id is not None:
            unacked.setdefault(task_id, []).append(tag)
    return Held({i.decode() if isinstance(i, bytes) else i for i in queued}, unacked)


def restore(client: redis.Redis, tag: Any) -> bool:
    """Put one unacknowledged message back at the head of its queue now. False when someone
    else (its worker's ack, kombu's own restore) took it first."""
    moved: list[bool] = []

    def move(pipe: Any) -> None:
        moved.clear()  # the transaction is run again if the hash changed under it
        raw = pipe.hget(UNACKED, tag)
        pipe.multi()
        pipe.zrem(UNACKED_INDEX, tag)
        pipe.hdel(UNACKED, tag)
        if raw:
            message, _exchange, routing_key = json.loads(raw)
            message["headers"]["redelivered"] = True
            # rpush: consumers pop from the right, so this one is taken next.
            pipe.rpush(routing_key, json.dumps(message))
            moved.append(True)

    client.transaction(move, UNACKED)
    return bool(moved)


def requeue_lapsed(*, engine: Engine, app: Celery, lapsed: list[Lapsed]) -> int:
    """Give lapsed trials back to their queues: each marked pending (only if still running
    under the same lapsed lease), then its old message restored or a new one published."""
    if not lapsed:
        return 0
    client = redis.Redis.from_url(app.conf.broker_url)
    try:
        # Only the unacknowledged hash is read (small: one entry per trial in flight). A
        # lapsed trial is rarely also waiting in a queue, and scanning every queue would stall
        # Redis for about a second per 40,000 messages; a second message is harmless anyway,
        # since a claim never runs a trial twice.
        held = broker_holdings(client, [])
        fresh: list[tuple[TrialSpec, str]] = []
        released = 0
        for trial in lapsed:
            if not release_lapsed(engine, trial.trial_id):
                continue  # its holder came back and finished, or someone took it already
            released += 1
            tags = held.unacked.get(trial.trial_id, [])
            if any(restore(client, tag) for tag in tags):
                continue
            fresh.append((TrialSpec.model_validate_json(trial.payload_json), trial.queue))
        publish_trials(app, fresh)
        to_front(client, fresh)
        return released
    finally:
        client.close()


def to_front(client: redis.Redis, trials: list[tuple[TrialSpec, str]]) -> int:
    """Put just-published trials at the head of their queues: a trial given back runs next,
    not behind thousands of pending ones. Returns how many were moved."""
    by_queue: dict[str, list[str]] = {}
    for trial, queue in trials:
        by_queue.setdefault(queue, []).append(trial.trial_id)
    return sum(int(client.eval(_TO_FRONT, 1, q, *ids)) for q, ids in by_queue.items())


def stranded_pending(*, engine: Engine, client: redis.Redis, older_than: float) -> int:
    """Restore messages of pending trials that have sat unacknowledged for `older_than`
    seconds: a worker took them from the queue and died before it claimed them. A live worker
    may still hold one (a retry waiting out its countdown); the copy then finds the trial
    claimed or recorded and does not run it again."""
    old: list[Any] = list(client.zrangebyscore(UNACKED_INDEX, 0, time.time() - older_than))
    if not old:
        return 0
    raws = client.hmget(UNACKED, old)
    ids = {tag: _task_id(raw) for tag, raw in zip(old, raws, strict=True) if raw is not None}
    wanted = {i for i in ids.values() if i is not None}
    pending = pending_of_active_sweeps(engine=engine, trial_ids=wanted)
    # A worker that died after recording its trial but before acknowledging the message left
    # an entry no one needs: acknowledge it here rather than let it come back in an hour.
    finished = finished_of(engine=engine, trial_ids=wanted - pending)
    for tag, task_id in ids.items():
        if task_id in finished:
            client.zrem(UNACKED_INDEX, tag)
            client.hdel(UNACKED, tag)
    return sum(restore(client, tag) for tag, task_id in ids.items() if task_id in pending)


def _unacked_pending(engine: Engine, client: redis.Redis) -> dict[str, int]:
    """Per queue: the pending trials whose message waits unacknowledged (a worker took it
    and has not claimed the trial yet)."""
    routes = dict(d for d in map(_delivery, client.hvals(UNACKED)) if d is not None)
    counts: dict[str, int] = {}
    for trial_id in pending_of_active_sweeps(engine=engine, trial_ids=routes):
        counts[routes[trial_id]] = counts.get(routes[trial_id], 0) + 1
    return counts


def lost_pending(*, engine: Engine, app: Celery, client: redis.Redis, older_than: float) -> int:
    """Publish again the pending trials of active sweeps (submitted `older_than` seconds ago
    or more) whose message the broker holds nowhere: not in a queue, not unacknowledged.
    Redis pops a message before kombu records it as delivered, so a worker killed in between
    loses it, and its trial would wait forever. Cheap when nothing is lost: a queue is read
    message by message only when it and the unacknowledged hash hold fewer of its pending
    trials than the database counts. A message found missing in a race (being handed over at
    that instant) is only a second copy: a claim never runs a trial twice."""
    before = datetime.now(UTC) - timedelta(seconds=older_than)
    counts = pending_counts(engine=engine, created_before=before)
    if not counts:
        return 0
    unacked = _unacked_pending(engine, client)
    short = [
        queue
        for queue, n in counts.items()
        if sum(client.llen(key) for key in _queue_keys(queue)) + unacked.get(queue, 0) < n
    ]
    if not short:
        return 0
    held = broker_holdings(client, short)
    rows = pending_payloads(engine=engine, queues=short, created_before=before)
    todo = [
        (TrialSpec.model_validate_json(payload), queue)
        for trial_id, payload, queue in rows
        if not held.has(trial_id)
    ]
    published = publish_trials(app, todo)
    to_front(client, todo)
    return published


def _queue_keys(queue: str) -> list[str]:
    """The Redis lists of a queue: its own and one per priority step."""
    return [queue, *(f"{queue}{PRIORITY_SEP}{p}" for p in PRIORITY_STEPS)]


def requeue_orphans(
    payload: RequeueRequest | dict[str, Any], settings: Settings, **_options: Any
) -> RequeueResult:
    """Task function (`farm.requeue_orphans`): give every lapsed trial of every active sweep
    back to its queue, and restore pending trials' messages stranded with a dead worker. Run
    every heartbeat by the worker holding the reaper lease (workers/node/reaper.py); with
    `{"act": false}` it only counts lapsed trials (a first look after the database was away)."""
    request = read_message("farm.requeue_orphans", payload, RequeueRequest)
    engine = make_engine(settings.resolved_database_url())
    try:
        stale_before = datetime.now(UTC) - timedelta(seconds=settings.stale_after_s())
        lapsed = lapsed_trials(engine=engine, stale_before=stale_before, sweep_id=None)
        if not request.act:
            return RequeueResult(lapsed=len(lapsed), requeued=0)
        app = make_celery(settings)
        requeued = requeue_lapsed(engine=engine, app=app, lapsed=lapsed)
        client = redis.Redis.from_url(settings.broker_url)
        try:
            restored = stranded_pending(
                engine=engine, client=client, older_than=2 * settings.stale_after_s()
            )
            lost = lost_pending(
                engine=engine, app=app, client=client, older_than=2 * settings.stale_after_s()
            )
        finally:
            client.close()
    finally:
        engine.dispose()
    return RequeueResult(lapsed=len(lapsed), requeued=requeued + restored, lost=lost)
