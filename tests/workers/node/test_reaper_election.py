"""One reaper at a time, elected through the broker: the lease is taken only when free,
renewed only by its holder, given up on a clean stop and lapsing on its own when the holder
dies; and a worker that has not reached the database for a full stale window does not ask."""

from __future__ import annotations

import logging
import time

import pytest
import redis

from mcp_farm.schema import Settings
from mcp_farm.workers.mcp.shared import free_port
from mcp_farm.workers.node.outage import BROKER
from mcp_farm.workers.node.reaper import LEASE_KEY, Reachability, Reaper


def ready() -> Reachability:
    reach = Reachability()
    reach.reached()
    reach._since = time.monotonic() - 3600  # reached the database an hour ago
    return reach


def reapers(redis_url: str, *names: str, heartbeat_s: float = 0.2) -> list[Reaper]:
    settings = Settings(broker_url=redis_url, heartbeat_s=heartbeat_s)
    return [Reaper(settings, ready(), name) for name in names]


def test_only_one_worker_holds_the_lease_and_a_clean_stop_hands_it_on(redis_url: str) -> None:
    a, b = reapers(redis_url, "a", "b")
    assert a.holds_lease() is True
    assert b.holds_lease() is False
    assert a.holds_lease() is True  # renewed by its holder
    a.stop()
    assert b.holds_lease() is True
    assert redis.Redis.from_url(redis_url).get(LEASE_KEY) == b"b"


def test_a_dead_holders_lease_lapses_within_two_heartbeats(redis_url: str) -> None:
    a, b = reapers(redis_url, "a", "b")
    assert a.holds_lease() is True  # then `a` dies: it never renews again
    # The lease lives two heartbeats (0.2 s each) from its last renewal: read from Redis, not
    # from a clock of our own, which a busy machine would stretch.
    left_ms = redis.Redis.from_url(redis_url).pttl(LEASE_KEY)
    assert 0 < left_ms <= 2 * 200
    taken_at = time.monotonic()
    while not b.holds_lease():
        assert time.monotonic() - taken_at < 30, "the lease never lapsed"
        time.sleep(0.05)


def test_a_worker_not_yet_ready_leaves_the_lease_alone(redis_url: str) -> None:
    settings = Settings(broker_url=redis_url, heartbeat_s=0.2)
    fresh = Reachability()
    fresh.reached()  # just now: not a full stale window yet
    assert Reaper(settings, fresh, "fresh").sweep_once() == 0
    assert Reaper(settings, Reachability(), "unreachable").sweep_once() == 0
    assert redis.Redis.from_url(redis_url).get(LEASE_KEY) is None


def test_reachability_breaks_on_a_lost_heartbeat() -> None:
    reach = ready()
    assert reach.for_s() > 3000
    reach.lost()
    assert reach.for_s() == 0.0
    reach.reached()
    assert 0.0 <= reach.for_s() < 1


def test_a_broker_outage_is_one_line_for_the_reaper_not_a_traceback_a_beat(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings(broker_url=f"redis://127.0.0.1:{free_port()}/0", heartbeat_s=0.2)
    reaper = Reaper(settings, ready(), "cut-off")
    caplog.set_level(logging.INFO)
    try:
        assert [reaper.sweep_once() for _ in range(20)] == [0] * 20
    finally:
        BROKER.ok()  # this test's outage ends here, not in the next test
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("the broker (Redis) is unreachable (reaper lease: ConnectionError")
    assert lines[-1].startswith("the broker (Redis) is reachable again after ")
    assert "20 reaper lease failed" in lines[-1]
    assert len(lines) == 2, lines
    assert not any(r.exc_info for r in caplog.records)


def test_a_republished_lost_message_and_a_dead_workers_trial_are_told_apart_in_the_log(
    redis_url: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_farm.schema.tasks.messages import RequeueResult
    from mcp_farm.workers.node import reaper as module

    def requeue_orphans(*_args: object) -> dict[str, int]:
        return RequeueResult(lapsed=2, requeued=2, lost=3).model_dump()

    monkeypatch.setattr(module, "load_task", lambda _name: requeue_orphans)
    [reaper] = reapers(redis_url, "holder")
    caplog.set_level(logging.INFO)
    assert reaper.sweep_once() == 5
    lines = [r.getMessage() for r in caplog.records]
    assert "gave 2 trial(s) of dead workers back to their queues" in lines
    assert any(
        line.startswith("published 3 pending trial(s) again whose message") for line in lines
    )
    assert not any("dead workers" in line and "3" in line for line in lines)
