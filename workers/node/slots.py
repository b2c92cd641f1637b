"""A per-endpoint concurrency cap shared by every worker process, kept in Redis.

A model target's `max_concurrency` says how many trials its endpoint may serve at once, however
many workers and processes take trials for it. Each running trial holds a slot: a member of a
sorted set scored by its lease expiry, so a slot held by a killed worker frees itself.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis

from mcp_farm.schema import ModelTarget
from mcp_farm.workers.errors import InfraError

POLL_S = 0.2

# Drop expired leases, then take a slot if one is free. Atomic, so two workers never both take
# the last slot.
_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
  redis.call('EXPIRE', KEYS[1], ARGV[5])
  return 1
end
return 0
"""


class SlotBusy(InfraError):
    """Every slot of the endpoint stayed taken for the whole wait."""


def slot_key(model: ModelTarget) -> str | None:
    """What the cap counts against: the endpoint URL, or the host for an in-process model.
    Scripted models serve themselves and have no cap."""
    if model.adapter == "openai":
        return f"farm:slots:{model.endpoint}"
    if model.adapter == "local":
        return f"farm:slots:local:{model.model}@{socket.gethostname()}"
    return None


class Slots:
    def __init__(self, url: str) -> None:
        self.client = redis.Redis.from_url(url)
        self._acquire = self.client.register_script(_ACQUIRE)

    @contextmanager
    def hold(self, model: ModelTarget, *, wait_s: float, lease_s: float) -> Iterator[None]:
        """Hold one of the model endpoint's slots for the block; SlotBusy after `wait_s`."""
        key = slot_key(model)
        if key is None:
            yield
            return
        token = uuid.uuid4().hex
        deadline = time.monotonic() + wait_s
        while not self._try(key, model.max_concurrency, token, lease_s):
            if time.monotonic() >= deadline:
                raise SlotBusy(f"all {model.max_concurrency} slot(s) of {key[11:]} stayed busy")
            time.sleep(POLL_S)
        try:
            yield
        finally:
            self.client.zrem(key, token)

    def _try(self, key: str, limit: int, token: str, lease_s: float) -> bool:
        now = time.time()
        args: list[str | float] = [now, limit, now + lease_s, token, int(lease_s) + 60]
        return bool(self._acquire(keys=[key], args=args))
