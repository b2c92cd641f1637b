"""What the broker holds, read from a real Redis: queued messages and deliveries a consumer
took without acknowledging them, and putting such a delivery back at the head of its queue."""

from __future__ import annotations

import json
from typing import Any

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


def _recorded(settings: Settings, name: str, repetitions: int) -> list[Any]:
    """A sweep of `repetitions` pending trials on QUEUE, recorded as submitted a while ago."""
    from mcp_farm.scheduler.submission.expand import expand
    from mcp_farm.scheduler.submission.queries import record_plan
    from mcp_farm.schema import SweepSpec
    from mcp_farm.schema.db import init_db, make_engine
    from tests.helpers import scripted

    sweep = SweepSpec(
        name=name,
        models=[scripted(ideal_script(SCENARIO))],
        prompts=["native"],
        scenarios={"ids": [SCENARIO.id]},  # type: ignore[arg-type]
        repetitions=repetitions,
    )
    plan = expand(sweep, name)
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    record_plan(engine=engine, plan=plan, queues={plan.trials[0].model.id: QUEUE})
    return plan.trials


def test_a_pending_trial_whose_message_is_nowhere_is_published_again(
    settings: Settings, redis_url: str
) -> None:
    from mcp_farm.scheduler.operations.recovery import lost_pending
    from mcp_farm.schema.db import make_engine

    engine = make_engine(settings.resolved_database_url())
    queued, taken, lost = _recorded(settings, "lost", 3)
    app = make_celery(Settings(broker_url=redis_url))
    client = redis.Redis.from_url(redis_url)
    with app.connection() as conn:
        publish_trials(app, [(taken, QUEUE)])
        delivered = conn.SimpleQueue(QUEUE).get(timeout=5)  # unacknowledged, not yet claimed
        assert delivered.headers["id"] == taken.trial_id
        publish_trials(app, [(queued, QUEUE)])
        # The third trial's message was popped by a worker killed before kombu recorded it.
        assert lost_pending(engine=engine, app=app, client=client, older_than=0) == 1
        held = broker_holdings(client, [QUEUE])
        assert held.queued == {queued.trial_id, lost.trial_id}
        assert set(held.unacked) == {taken.trial_id}
        # Found again, nothing is lost: no second copy is published.
        assert lost_pending(engine=engine, app=app, client=client, older_than=0) == 0
        # A sweep submitted moments ago may still be publishing: left alone.
        assert lost_pending(engine=engine, app=app, client=client, older_than=3600) == 0
    client.close()
