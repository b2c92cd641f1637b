"""A worker whose pool process is killed before the pool has started comes back: Celery ends
the whole worker then ("Could not start worker processes"), and `farm worker` starts it again
as the same process, which enrols again and serves."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tests.distributed.conftest import Farm, wait_until
from tests.faults.conftest import OwnRedis

pytestmark = pytest.mark.faults

NAME = "farm-cpu@test"


def pool_processes(pid: int) -> list[int]:
    """The worker's children that are forks of its own interpreter: before the pool forks, the
    worker runs other programs as children too (`git rev-parse` for its provenance), and under
    load the test once killed that one instead and waited for a restart that had no cause."""
    python = os.path.realpath(sys.executable)
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in task.read_text().split():
            try:
                if os.path.realpath(f"/proc/{child}/exe") == python:
                    found.append(int(child))
            except OSError:  # the child ended between the two reads
                continue
    return found


def test_a_worker_whose_pool_process_dies_before_the_pool_started_comes_back(
    fault_farm: Farm, own_redis: OwnRedis
) -> None:
    farm = fault_farm
    log_path = farm.logs / f"{NAME}.log"
    # With the broker away the pool is forked but the worker waits to consume, so the pool
    # process can be killed before the pool counts as started, every time.
    own_redis.kill()
    argv = [sys.executable, "-m", "mcp_farm.scheduler.cli.app", "worker", "--tags", "cpu"]
    proc = farm.start([*argv, "--name", NAME, "--concurrency", "1"], f"{NAME}.log")
    [pool_process] = wait_until(lambda: pool_processes(proc.pid), 60, "the pool process to fork")
    os.kill(pool_process, signal.SIGKILL)
    own_redis.start()
    wait_until(
        lambda: "starting it again" in log_path.read_text(errors="replace"),
        120,
        "the worker to say it starts again",
    )
    log = log_path.read_text(errors="replace")
    assert "Could not start worker processes" in log, log
    wait_until(lambda: farm.node_up(NAME, proc), 120, "the worker to enrol again")
    assert proc.poll() is None
    farm.stop(proc)
    assert proc.returncode == 0  # a stop that was asked for is final, and no failure
