"""A broker outage in a worker's log reads like the farm's other outages: one line when it
starts, a summary while it lasts, one line when it ends; no line per reconnection attempt, no
deprecation warning, no traceback."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.distributed.conftest import Farm, wait_until
from tests.faults.conftest import OwnRedis

pytestmark = pytest.mark.faults


@contextmanager
def refusing_broker(port: int) -> Iterator[list[int]]:
    """A listener on the broker's port that hangs up on every connection, as a broker that is
    going away does; yields the count of connection attempts it has seen so far."""
    seen = [0]
    listener = socket.create_server(("127.0.0.1", port))
    listener.settimeout(0.2)
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            seen[0] += 1
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        done.set()
        thread.join(timeout=5)
        listener.close()


def test_a_broker_outage_is_one_line_when_it_starts_and_one_when_it_ends(
    fault_farm: Farm, own_redis: OwnRedis, tmp_path: Path
) -> None:
    farm = fault_farm
    worker = farm.worker("cpu", "farm-cpu@test")
    log_path = farm.logs / "farm-cpu@test.log"
    own_redis.kill()
    with refusing_broker(own_redis.port) as attempts:
        # Several reconnection attempts, each of which used to be an error of its own.
        wait_until(lambda: attempts[0] >= 6, 120, "the worker to try the broker six times")
    own_redis.start()
    wait_until(
        lambda: "the broker (Redis) is reachable again" in log_path.read_text(errors="replace"),
        120,
        "the worker to say the broker is back",
    )
    farm.stop(worker)
    log = log_path.read_text(errors="replace")
    assert log.count("the broker (Redis) is unreachable (") == 1, log
    assert log.count("the broker (Redis) is reachable again after") == 1, log
    assert "Cannot connect to" not in log and "Trying again" not in log, log
    assert "Connection to broker lost" not in log, log
    assert "DeprecationWarning" not in log and "Celery 6.0" not in log, log
    assert "Traceback" not in log, log
