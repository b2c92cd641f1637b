"""A worker whose pool process is killed before the pool has started comes back: Celery ends
the whole worker then ("Could not start worker processes"), and `farm worker` starts it again
as the same process, which enrols again and serves.

Celery checks the pool only on its consumer's first start. If that start met a broker error
after connecting, its restart has already replaced the dead process, and the worker serves on
without stopping; that is coming back too, and the test accepts it, but only then."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.distributed.conftest import Farm, wait_until
from tests.faults.conftest import OwnRedis

pytestmark = pytest.mark.faults

NAME = "farm-cpu@test"
STEADY_S = 1.0
"""How long a child must stay a fork of the worker's interpreter to count as its pool process."""


def interpreter_children(pid: int) -> set[int]:
    """The worker's children that run its own interpreter now."""
    python = os.path.realpath(sys.executable)
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in task.read_text().split():
            try:
                if os.path.realpath(f"/proc/{child}/exe") == python:
                    found.add(int(child))
            except OSError:  # the child ended between the two reads
                continue
    return found


def pool_process(pid: int, seconds: float, not_this: int = 0) -> int:
    """The worker's pool process (concurrency 1): a child that runs the worker's interpreter
    and still does `STEADY_S` later. The worker runs other programs as children too (`git
    rev-parse` for its provenance), and until such a child `exec`s, it is a fork of the
    interpreter as well: the test once killed that one and waited for a restart with no
    cause."""
    deadline = time.monotonic() + seconds
    seen: dict[int, float] = {}
    while time.monotonic() < deadline:
        now = time.monotonic()
        children = interpreter_children(pid) - {not_this}
        seen = {child: seen.get(child, now) for child in children}
        steady = [child for child, since in seen.items() if now - since >= STEADY_S]
        if steady:
            [child] = steady
            return child
        time.sleep(0.1)
    pytest.fail(f"timed out after {seconds:g} s waiting for the worker's pool process")


def test_a_worker_whose_pool_process_dies_before_the_pool_started_comes_back(
    fault_farm: Farm, own_redis: OwnRedis
) -> None:
    farm = fault_farm
    log_path = farm.logs / f"{NAME}.log"

    def log() -> str:
        return log_path.read_text(errors="replace")

    # With the broker away the pool is forked but the worker waits to consume, so the pool
    # process can be killed before the pool counts as started, every time.
    own_redis.kill()
    argv = [sys.executable, "-m", "mcp_farm.scheduler.cli.app", "worker", "--tags", "cpu"]
    proc = farm.start([*argv, "--name", NAME, "--concurrency", "1"], f"{NAME}.log")
    killed = pool_process(proc.pid, 60)
    os.kill(killed, signal.SIGKILL)
    own_redis.start()
    try:
        # Celery names the process it lost: the one killed was the pool's.
        wait_until(lambda: f"pid:{killed} exited" in log(), 120, "Celery to see its pool lost")
        wait_until(lambda: farm.node_up(NAME, proc), 120, "the worker to enrol")
        pool_process(proc.pid, 60, not_this=killed)  # a pool serves again
        wait_until(lambda: farm.node_up(NAME, proc), 120, "the worker to enrol again")
    except BaseException:
        print(log()[-6000:])  # shown with the failure
        raise
    if "Could not start worker processes" in log():
        assert "starting it again" in log(), log()[-6000:]
    else:  # Celery's consumer started again first, and replaced the process
        assert "starting it again" not in log(), log()[-6000:]
    assert proc.poll() is None
    farm.stop(proc)
    assert proc.returncode == 0  # a stop that was asked for is final, and no failure
