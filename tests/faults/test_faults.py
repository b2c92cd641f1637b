"""Faults injected into a real farm: workers killed mid-trial, the database and the broker
taken away, the broker failing in the middle of a submit. Each test counts the rows after:
every trial recorded exactly once, nothing run twice that did not have to be."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.distributed.conftest import (
    ROOT,
    Farm,
    wait_until,
)
from tests.distributed.test_farm import (
    BUDGET,
    counts,
    scripted,
    slow_suite,
)
from tests.faults.conftest import (
    OwnPostgres,
    OwnRedis,
)
from tests.helpers import ideal_script

pytestmark = pytest.mark.faults

SLOW_SCRIPT = [
    {"call": {"name": "fetch_summary", "arguments": {"report_id": "7"}}},
    {"answer": "Revenue was 1,200."},
]


def slow_sweep(tmp_path: Path, name: str, repetitions: int) -> dict[str, Any]:
    """Trials of about four seconds each (a tool that takes its time)."""
    return {
        "name": name,
        "models": [scripted("slowpoke", "cpu", SLOW_SCRIPT)],
        "prompts": ["native"],
        "scenarios": {"suites": [str(slow_suite(tmp_path))]},
        "repetitions": repetitions,
    }


def trial_rows(farm: Farm, sweep_id: str) -> dict[str, tuple[str, int]]:
    rows = farm.rows(
        "select trial_id, outcome, attempts from trial where sweep_id = :s", s=sweep_id
    )
    return {trial_id: (outcome, attempts) for trial_id, outcome, attempts in rows}


def tool_calls(farm: Farm, sweep_id: str) -> int:
    found = farm.rows(
        "select count(*) from tool_call join trial using (trial_id) where trial.sweep_id = :s",
        s=sweep_id,
    )
    return int(found[0][0])


def running_on(farm: Farm, sweep_id: str, node: str) -> set[str]:
    rows = farm.rows(
        "select trial_id from trial where sweep_id = :s and status = 'running' and node = :n",
        s=sweep_id,
        n=node,
    )
    return {r[0] for r in rows}


def taken_by(farm: Farm, node: str) -> set[str]:
    return {r[0] for r in farm.rows("select trial_id from trial where node = :n", n=node)}


def test_workers_killed_mid_trial_are_requeued_promptly_and_each_trial_recorded_once(
    fault_farm: Farm, tmp_path: Path
) -> None:
    # The default visibility timeout (an hour) is kept: recovery must come from the leases.
    farm = fault_farm
    sweep_id = farm.submit(farm.sweep_file(tmp_path, slow_sweep(tmp_path, "kill", 12)))
    farm.worker("igpu", "farm-control@test", "--control")
    doomed = farm.worker("cpu", "farm-a@test", "--concurrency", "2")
    farm.worker("cpu", "farm-b@test", "--concurrency", "2")
    wait_until(lambda: running_on(farm, sweep_id, "farm-a@test"), 60, "worker a to run trials")

    farm.stop(doomed, signal.SIGKILL)  # main process, pool and MCP servers at once
    orphans = running_on(farm, sweep_id, "farm-a@test")
    assert orphans
    killed_at = time.monotonic()
    wait_until(lambda: not orphans & taken_by(farm, "farm-a@test"), 120, "the orphans requeued")
    print(f"\nthe dead worker's trials were taken over {time.monotonic() - killed_at:.1f} s after")
    wait_until(lambda: counts(farm, sweep_id) == {"done": 12}, 120, "every trial recorded")

    rows = trial_rows(farm, sweep_id)
    assert len(rows) == 12
    assert {outcome for outcome, _ in rows.values()} == {"pass"}
    # Each orphan ran once more; no other trial ran twice.
    assert {rows[t][1] for t in orphans} == {2}
    assert {attempts for t, (_, attempts) in rows.items() if t not in orphans} == {1}
    assert tool_calls(farm, sweep_id) == 12


def outage(farm: Farm, postgres: OwnPostgres, *, until: str) -> None:
    """Stop PostgreSQL until the worker's log says `until`, then start it again."""
    postgres.stop()
    log = farm.logs / "farm-cpu@test.log"
    wait_until(lambda: until in log.read_text(errors="replace"), 60, f"the worker to log {until!r}")
    postgres.start()


def test_postgres_down_past_the_retry_window_loses_no_trial(
    fault_farm: Farm, own_postgres: OwnPostgres, tmp_path: Path
) -> None:
    farm = fault_farm
    sweep_id = farm.submit(farm.sweep_file(tmp_path, slow_sweep(tmp_path, "pg-down", 8)))
    farm.worker("cpu", "farm-cpu@test", "--concurrency", "2", FARM_STORE_RETRY_S="2")
    wait_until(lambda: counts(farm, sweep_id).get("done"), 60, "a first trial")

    # Down until a finished trial has given up on the database and gone back to the queue.
    outage(farm, own_postgres, until="giving it back to the queue")

    wait_until(lambda: counts(farm, sweep_id) == {"done": 8}, 120, "every trial recorded")
    rows = trial_rows(farm, sweep_id)
    assert len(rows) == 8
    assert {outcome for outcome, _ in rows.values()} == {"pass"}
    assert tool_calls(farm, sweep_id) == 8
    quiet_outage(farm)


def quiet_outage(farm: Farm) -> None:
    """What an admin sees: a line when the outage starts and one when it ends, no traceback."""
    log = (farm.logs / "farm-cpu@test.log").read_text(errors="replace")
    assert log.count("the results database is unreachable (") >= 1
    assert "the results database is reachable again after" in log
    assert "Traceback" not in log


def test_a_database_outage_inside_the_retry_window_costs_only_the_wait(
    fault_farm: Farm, own_postgres: OwnPostgres, tmp_path: Path
) -> None:
    farm = fault_farm
    sweep_id = farm.submit(farm.sweep_file(tmp_path, slow_sweep(tmp_path, "pg-blip", 4)))
    farm.worker("cpu", "farm-cpu@test", "--concurrency", "2")
    wait_until(lambda: counts(farm, sweep_id).get("running"), 60, "a trial to start")

    outage(farm, own_postgres, until="waits for the database")  # a trial is waiting for it

    wait_until(lambda: counts(farm, sweep_id) == {"done": 4}, 120, "every trial recorded")
    rows = trial_rows(farm, sweep_id)
    assert {outcome for outcome, _ in rows.values()} == {"pass"}
    assert {attempts for _, attempts in rows.values()} == {1}  # nothing ran twice
    assert tool_calls(farm, sweep_id) == 4
    quiet_outage(farm)


def test_redis_restarted_empty_is_recovered_by_resume_without_running_anything_twice(
    fault_farm: Farm, own_redis: OwnRedis, tmp_path: Path
) -> None:
    farm = fault_farm
    sweep_id = farm.submit(farm.sweep_file(tmp_path, slow_sweep(tmp_path, "redis-lost", 8)))
    farm.worker("cpu", "farm-cpu@test", "--concurrency", "2")
    wait_until(lambda: counts(farm, sweep_id).get("done"), 60, "a first trial")

    own_redis.kill()
    own_redis.start()  # no persistence: every queued message is gone
    # What was running when the broker died still finishes and is recorded.
    wait_until(lambda: "running" not in counts(farm, sweep_id), 60, "the running trials")
    # The reaper publishes again trials whose messages are nowhere, so some may be running
    # already; whatever is still pending is resumed.
    pending = counts(farm, sweep_id).get("pending", 0)

    out = " ".join(farm.cli("sweep", "resume", sweep_id).stdout.split())
    # The reaper may have published some of them again already (their messages were nowhere):
    # resume publishes the rest and leaves those alone, so each is queued once.
    found = re.search(r"re-published (\d+) trial\(s\) of \S+; (\d+) still queued", out)
    assert found is not None, out
    # The worker keeps taking what the reaper queued while resume runs, so resume may see fewer
    # pending trials than were counted a moment before, never more; each is queued once, which
    # the single attempt and single tool call per trial below hold.
    assert int(found[1]) + int(found[2]) <= pending, out
    wait_until(lambda: counts(farm, sweep_id) == {"done": 8}, 120, "every trial recorded")
    rows = trial_rows(farm, sweep_id)
    assert {outcome for outcome, _ in rows.values()} == {"pass"}
    assert {attempts for _, attempts in rows.values()} == {1}
    assert tool_calls(farm, sweep_id) == 8


def queued_ids(url: str, queue: str) -> list[str]:
    """The task id of every message in `queue`, read independently of the farm's own code."""
    client = redis.Redis.from_url(url)
    try:
        return [json.loads(raw)["headers"]["id"] for raw in client.lrange(queue, 0, -1)]
    finally:
        client.close()


def big_sweep(tmp_path: Path, farm: Farm) -> tuple[Path, int]:
    """Thousands of trials that no worker will run: only publishing is under test."""
    spec = {
        "name": "big",
        "models": [scripted("ideal", "cpu", ideal_script(BUDGET))],
        "prompts": ["native", "json"],
        "scenarios": {"ids": [BUDGET.id]},
        "repetitions": 3000,
    }
    return farm.sweep_file(tmp_path, spec), 6000


def test_a_broker_failing_mid_submit_is_resumed_with_each_trial_published_once(
    fault_farm: Farm, own_redis: OwnRedis, tmp_path: Path
) -> None:
    farm = fault_farm
    sweep, total = big_sweep(tmp_path, farm)
    client = redis.Redis.from_url(own_redis.url)
    used = int(client.info("memory")["used_memory"])
    # Room for part of the sweep only: the broker starts refusing writes half way through.
    client.config_set("maxmemory", used + 4 * 1024 * 1024)
    client.config_set("maxmemory-policy", "noeviction")
    failed = farm.cli("sweep", "submit", str(sweep), check=False)
    assert failed.returncode != 0
    assert "sweep resume" in failed.stderr
    queued = client.llen("farm.hw.cpu")
    assert 0 < queued < total
    # The count it gives is what the broker confirmed: exactly what its queue holds.
    said = re.search(r"it had confirmed (\d+) of them", " ".join(failed.stderr.split()))
    assert said is not None, failed.stderr
    assert int(said.group(1)) == queued

    client.config_set("maxmemory", 0)
    sweep_id = farm.rows("select sweep_id from sweep")[0][0]
    out = farm.cli("sweep", "resume", sweep_id).stdout
    assert f"re-published {total - queued} trial(s)" in out
    assert f"{queued} still queued" in out
    ids = queued_ids(own_redis.url, "farm.hw.cpu")
    assert len(ids) == total == len(set(ids))

    # The broker dies and comes back empty: resume publishes everything, once.
    own_redis.kill()
    own_redis.start()
    out = farm.cli("sweep", "resume", sweep_id).stdout
    assert f"re-published {total} trial(s)" in out
    again = farm.cli("sweep", "resume", sweep_id).stdout
    assert "re-published 0 trial(s)" in again
    ids = queued_ids(own_redis.url, "farm.hw.cpu")
    assert len(ids) == total == len(set(ids))
    client.close()


def test_a_killed_submit_leaves_a_sweep_that_resume_completes(
    fault_farm: Farm, own_redis: OwnRedis, tmp_path: Path
) -> None:
    farm = fault_farm
    sweep, total = big_sweep(tmp_path, farm)
    client = redis.Redis.from_url(own_redis.url)
    submit = subprocess.Popen(
        [sys.executable, "-m", "mcp_farm.scheduler.cli.app", "sweep", "submit", str(sweep)],
        env=farm.env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # Kill the broker as soon as the first batch lands (or the submit ends first).
    wait_until(lambda: submit.poll() is not None or client.llen("farm.hw.cpu"), 120, "a batch")
    own_redis.kill()
    submit.communicate(timeout=120)
    own_redis.start()
    sweep_id = farm.rows("select sweep_id from sweep")[0][0]
    assert farm.rows("select count(*) from trial")[0][0] == total  # recorded before publishing
    out = farm.cli("sweep", "resume", sweep_id).stdout
    assert f"re-published {total} trial(s)" in out
    ids = queued_ids(own_redis.url, "farm.hw.cpu")
    assert len(ids) == total == len(set(ids))
    client.close()
