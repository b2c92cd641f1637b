"""Recovery that depends on no one process: every worker can reap, one at a time by a lease
in the broker. Killing the reaper, again and again, or running with no control worker at all,
still gives every abandoned trial back, each recorded once, with no delivery left unacked."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis

from mcp_farm.schema.settings import STALE_AFTER_BEATS
from tests.distributed.conftest import Farm, wait_until
from tests.distributed.test_farm import counts
from tests.faults.conftest import OwnRedis
from tests.faults.test_faults import running_on, slow_sweep, taken_by, tool_calls, trial_rows

pytestmark = pytest.mark.faults

LEASE_KEY = "farm:reaper"


def lease_holder(redis_url: str) -> str | None:
    client = redis.Redis.from_url(redis_url)
    try:
        found = client.get(LEASE_KEY)
    finally:
        client.close()
    return None if found is None else found.decode().rsplit(":", 1)[0]


def unacked(redis_url: str) -> int:
    client = redis.Redis.from_url(redis_url)
    try:
        return int(client.hlen("unacked"))
    finally:
        client.close()


def test_without_a_control_worker_abandoned_trials_are_still_given_back(
    fault_farm: Farm, own_redis: OwnRedis, tmp_path: Path
) -> None:
    farm = fault_farm
    sweep_id = farm.submit(farm.sweep_file(tmp_path, slow_sweep(tmp_path, "nocontrol", 8)))
    doomed = farm.worker("cpu", "farm-a@test", "--concurrency", "2")
    farm.worker("cpu", "farm-b@test", "--concurrency", "2")
    wait_until(lambda: running_on(farm, sweep_id, "farm-a@test"), 60, "worker a to run trials")
    farm.stop(doomed, signal.SIGKILL)
    orphans = running_on(farm, sweep_id, "farm-a@test")
    assert orphans
    wait_until(lambda: not orphans & taken_by(farm, "farm-a@test"), 120, "the orphans requeued")
    wait_until(lambda: counts(farm, sweep_id) == {"done": 8}, 120, "every trial recorded")
    rows = trial_rows(farm, sweep_id)
    assert {outcome for outcome, _ in rows.values()} == {"pass"}
    assert {rows[t][1] for t in orphans} == {2}
    assert tool_calls(farm, sweep_id) == 8


def test_the_reaper_killed_again_and_again_delays_recovery_by_at_most_a_stale_window(
    fault_farm: Farm, own_redis: OwnRedis, tmp_path: Path
) -> None:
    farm = fault_farm
    # Enough four-second trials to keep three workers busy through three rounds of a few stale
    # windows each: 30 per second of heartbeat (FARM_FAULT_HEARTBEAT_S=10 measures the default).
    total = 30 * max(1, round(float(farm.env["FARM_HEARTBEAT_S"])))
    sweep_id = farm.submit(farm.sweep_file(tmp_path, slow_sweep(tmp_path, "reaperkill", total)))
    names = ["farm-a@test", "farm-b@test", "farm-c@test"]
    procs: dict[str, subprocess.Popen[bytes]] = {
        n: farm.worker("cpu", n, "--concurrency", "2") for n in names
    }
    orphans: set[str] = set()
    took: list[float] = []
    loads: list[float] = []  # run-queue length per core when each recovery was seen
    for _round in range(3):
        holder = wait_until(lambda: lease_holder(own_redis.url), 60, "a worker to take the lease")
        wait_until(lambda h=holder: running_on(farm, sweep_id, h), 60, f"{holder} to run trials")
        mine = running_on(farm, sweep_id, holder)
        farm.stop(procs[holder], signal.SIGKILL)  # the reaper dies with its trials
        killed_at = time.monotonic()
        orphans |= mine
        wait_until(lambda m=mine, h=holder: not m & taken_by(farm, h), 120, "the orphans requeued")
        took.append(time.monotonic() - killed_at)
        loads.append(os.getloadavg()[0] / (os.cpu_count() or 1))
        procs[holder] = farm.worker("cpu", holder, "--concurrency", "2")  # it comes back
    wait_until(lambda: counts(farm, sweep_id) == {"done": total}, 600, "every trial recorded")
    print(f"\nthe reaper's own trials ran elsewhere after {', '.join(f'{t:.1f}' for t in took)} s")
    # Without a kill, recovery takes a stale window and a reaper's beat; killing the reaper may
    # add at most one more stale window (its lease lapses meanwhile), plus starting slack. The
    # slack grows with the machine's load (CI runs this lane beside the xdist lane on two
    # cores): heartbeats and polls wait for a core, which says nothing about the reaper.
    beat = float(farm.env["FARM_HEARTBEAT_S"])
    bound = 2 * STALE_AFTER_BEATS * beat + 2 * beat + 10 * max(1.0, max(loads))
    assert max(took) <= bound, f"recovery took {max(took):.1f} s, over {bound:.0f} s"
    rows = trial_rows(farm, sweep_id)
    assert len(rows) == total and {outcome for outcome, _ in rows.values()} == {"pass"}
    assert tool_calls(farm, sweep_id) == total  # no trial recorded twice
    assert all(rows[t][1] >= 2 for t in orphans)
    wait_until(lambda: unacked(own_redis.url) == 0, 60, "no delivery left unacknowledged")
