"""Giving trials whose worker died back to their queues, from whichever worker holds the lease.

Every worker runs a reaper thread; one at a time reaps. They elect it through the broker: a
Redis key (`farm:reaper`) set only if absent, with a time to live of two heartbeats, renewed
every heartbeat by its holder and by no one else. When the holder dies, its lease lapses and
the next worker to look takes it over. So killing any process, the reaper's included, delays
recovery by at most a few heartbeats, and a farm without a control worker still recovers.

A worker may reap only after it has reached the database without a break for a full stale
window (its heartbeats say so): right after an outage every trial lease looks old, though live
holders have simply not been able to renew them yet. A worker that is not yet ready does not
ask for the lease, so a freshly restarted worker never holds up a ready one.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any

import redis
from kombu.exceptions import OperationalError as KombuError
from sqlalchemy.exc import SQLAlchemyError

from mcp_farm.schema import Settings, StoreError, load_task
from mcp_farm.schema.tasks.messages import RequeueRequest, RequeueResult, read_result
from mcp_farm.workers.node.outage import BROKER, DATABASE

logger = logging.getLogger(__name__)

LEASE_KEY = "farm:reaper"
LEASE_BEATS = 2
"""Heartbeats a reaper lease outlives its last renewal by."""

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""


class Reachability:
    """Since when this worker has reached the database without a break (its heartbeats)."""

    def __init__(self) -> None:
        self._since: float | None = None
        self._lock = threading.Lock()

    def reached(self) -> None:
        with self._lock:
            if self._since is None:
                self._since = time.monotonic()

    def lost(self) -> None:
        with self._lock:
            self._since = None

    def for_s(self) -> float:
        """Seconds of unbroken reach; 0 while unreachable."""
        with self._lock:
            return 0.0 if self._since is None else time.monotonic() - self._since


class Reaper:
    """This worker's reaper thread: it reaps, every heartbeat, while it holds the lease."""

    def __init__(self, settings: Settings, reach: Reachability, name: str | None = None) -> None:
        self.settings, self.reach = settings, reach
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self._stop = threading.Event()
        self._client: Any = None

    def start(self) -> None:
        threading.Thread(target=self._run, name="farm-reaper", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        self._release()

    def _run(self) -> None:
        while not self._stop.wait(self.settings.heartbeat_s):
            self.sweep_once()

    def _redis(self) -> Any:
        if self._client is None:
            self._client = redis.Redis.from_url(self.settings.broker_url, socket_timeout=5)
        return self._client

    def holds_lease(self) -> bool:
        """Take the lease if it is free, or renew it if it is ours; whether we hold it now."""
        ttl_ms = int(LEASE_BEATS * self.settings.heartbeat_s * 1000)
        client = self._redis()
        if client.set(LEASE_KEY, self.name, nx=True, px=ttl_ms):
            logger.info("%s now reaps abandoned trials for the farm", self.name)
            return True
        return bool(client.eval(_RENEW, 1, LEASE_KEY, self.name, ttl_ms))

    def _release(self) -> None:
        """Give the lease up on a clean stop, so another worker takes over at once."""
        try:
            client = self._redis()
            if client.get(LEASE_KEY) in (self.name, self.name.encode()):
                client.delete(LEASE_KEY)
        except redis.RedisError:
            pass  # it lapses on its own

    def sweep_once(self) -> int:
        """One pass; returns how many trials were given back or published again (0 while it
        may not act)."""
        if self.reach.for_s() < self.settings.stale_after_s():
            return 0  # not ready: leave the lease to a worker that is
        try:
            held = self.holds_lease()
        except redis.RedisError as exc:  # the broker is away: expected, said quietly
            BROKER.failed("reaper lease", exc)
            return 0
        BROKER.ok()
        if not held:
            return 0
        try:
            task = load_task("farm.requeue_orphans")
            done = read_result(
                "farm.requeue_orphans", task(RequeueRequest(act=True), self.settings), RequeueResult
            )
        except (SQLAlchemyError, StoreError) as exc:  # the database is away: expected
            DATABASE.failed("reaper check", exc)
            return 0
        except (redis.RedisError, KombuError) as exc:  # the broker went away mid-pass
            BROKER.failed("reaper requeue", exc)
            return 0
        except Exception:  # a boundary: the reaper must outlive any outage
            logger.warning("could not look for abandoned trials", exc_info=True)
            return 0
        # Two lines, because they mean different things to an admin: a dead worker (look at
        # that machine) and a message Redis lost in a hand-over (nothing to look at).
        if done.requeued:
            logger.warning("gave %d trial(s) of dead workers back to their queues", done.requeued)
        if done.lost:
            logger.warning(
                "published %d pending trial(s) again whose message the broker had lost "
                "(a worker stopped while Redis handed it over)",
                done.lost,
            )
        return done.requeued + done.lost
