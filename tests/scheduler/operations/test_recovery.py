"""What the broker holds, read from a real Redis: queued messages and deliveries a consumer
took without acknowledging them, and putting such a delivery back at the head of its queue."""

from __future__ import annotations

import json

import redis

from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.operations.recovery import (
    broker_holdings,
    restore,
    to_front,
)
from mcp_farm.scheduler.submission.publish import publish_trials
from mcp_farm.schema import Settings
from mcp_farm.schema.tasks.broker import make_celery
from tests.helpers import (
    ideal_script,
    trial,
)

SCENARIO = load_suite("basic").scenarios[0]
QUEUE = "farm.hw.cpu"


def test_queued_and_unacknowledged_trials_are_found_and_a_delivery_is_restored(
    redis_url: str,
) -> None:
    app = make_celery(Settings(broker_url=redis_url))
    specs = [trial(SCENARIO, ideal_script(SCENARIO), repetition=r) for r in range(3)]
    assert publish_trials(app, [(s, QUEUE) for s in specs]) == 3
    client = redis.Redis.from_url(redis_url)

    with app.connection() as conn:
        taken = conn.SimpleQueue(QUEUE).get(timeout=5)  # delivered, not acknowledged
        taken_id = taken.headers["id"]
        held = broker_holdings(client, [QUEUE])
        assert held.queued == {s.trial_id for s in specs} - {taken_id}
        assert set(held.unacked) == {taken_id}
        assert all(held.has(s.trial_id) for s in specs)

        [tag] = held.unacked[taken_id]
        assert restore(client, tag) is True
        assert restore(client, tag) is False  # already moved: never queued twice
        after = broker_holdings(client, [QUEUE])
        assert after.queued == {s.trial_id for s in specs} and not after.unacked
        # Put at the head: the restored trial is the next one a worker takes.
        first = json.loads(client.lindex(QUEUE, -1) or b"{}")
        assert first["headers"]["id"] == taken_id and first["headers"]["redelivered"]
    client.close()


def test_a_trial_published_again_goes_to_the_head_of_its_queue(redis_url: str) -> None:
    app = make_celery(Settings(broker_url=redis_url))
    specs = [trial(SCENARIO, ideal_script(SCENARIO), repetition=r) for r in range(5)]
    publish_trials(app, [(s, QUEUE) for s in specs[:4]])
    publish_trials(app, [(specs[4], QUEUE)])  # given back: published after the others
    client = redis.Redis.from_url(redis_url)
    assert to_front(client, [(specs[4], QUEUE)]) == 1
    order = [json.loads(m)["headers"]["id"] for m in reversed(client.lrange(QUEUE, 0, -1))]
    assert order == [specs[4].trial_id, *(s.trial_id for s in specs[:4])]  # taken first
    client.close()
