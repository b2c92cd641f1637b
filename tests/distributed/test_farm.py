"""The distributed farm end to end: tagged workers, redelivery, late enrolment, cancel/resume."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from sqlalchemy import text

from mcp_farm.scenarios import load_suite
from tests.distributed.conftest import (
    SLOW_SERVER,
    Farm,
    wait_until,
)
from tests.helpers import (
    free_port,
    ideal_script,
    wait_until_serving,
)

pytestmark = pytest.mark.integration

BUDGET = next(s for s in load_suite("basic").scenarios if s.id == "fs.budget-total")


def scripted(model_id: str, hardware: str, script: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": model_id,
        "adapter": "scripted",
        "model": "script",
        "hardware": hardware,
        "script": script,
    }


def two_model_sweep(name: str = "two-tags", repetitions: int = 3) -> dict[str, Any]:
    return {
        "name": name,
        "models": [
            scripted("small-igpu", "igpu", ideal_script(BUDGET)),
            scripted("large-dgpu", "dgpu", ideal_script(BUDGET)),
        ],
        "prompts": ["native", "json"],
        "scenarios": {"ids": [BUDGET.id]},
        "repetitions": repetitions,
    }


def counts(farm: Farm, sweep_id: str) -> dict[str, int]:
    rows = farm.rows(
        "select status, count(*) from trial where sweep_id = :s group by 1", s=sweep_id
    )
    return {status: n for status, n in rows}


def test_two_tagged_workers_each_run_their_own_models_and_the_scorecard_is_stored(
    farm: Farm, tmp_path: Path
) -> None:
    farm.worker("igpu", "farm-igpu@test", "--control", "--concurrency", "2")
    farm.worker("dgpu", "farm-dgpu@test")
    port = free_port()
    flower = farm.start(
        [sys.executable, "-m", "mcp_farm.scheduler.cli.app", "flower", "--port", str(port)],
        "flower.log",
        FARM_FLOWER_USER="lab",
        FARM_FLOWER_PASSWORD="s3cret",
    )
    sweep_id = farm.submit(farm.sweep_file(tmp_path, two_model_sweep()))

    wait_until(
        lambda: farm.rows("select 1 from scorecard where sweep_id = :s", s=sweep_id),
        120,
        "the aggregate task to store the scorecard",
    )
    trials = farm.rows(
        "select model_id, worker_tag, node, outcome, attempts from trial where sweep_id = :s",
        s=sweep_id,
    )
    assert len(trials) == 12
    expected_tag = {"small-igpu": "igpu", "large-dgpu": "dgpu"}
    for model_id, tag, node, outcome, attempts in trials:
        assert tag == expected_tag[model_id]
        assert node == f"farm-{tag}@test"
        assert (outcome, attempts) == ("pass", 1)
    calls = farm.rows(
        "select count(*) from tool_call join trial using (trial_id) where trial.sweep_id = :s",
        s=sweep_id,
    )
    assert calls[0][0] == 12 * len(BUDGET.expect)

    report = farm.cli("report", sweep_id).stdout
    assert "small-igpu" in report and "large-dgpu" in report and "100%" in report
    status = farm.cli("sweep", "status", sweep_id).stdout
    assert "12/12 finished" in status and "farm.hw.igpu" in status
    nodes = farm.cli("workers").stdout
    assert "farm-igpu@test" in nodes and "farm-dgpu@test" in nodes

    url = f"http://127.0.0.1:{port}"
    wait_until_serving(f"{url}/healthcheck", flower, 60, "Flower")
    assert httpx.get(f"{url}/api/workers", timeout=10).status_code == 401

    def flower_workers() -> set[str]:
        reply = httpx.get(
            f"{url}/api/workers", params={"refresh": "true"}, auth=("lab", "s3cret"), timeout=30
        )
        return set(reply.json()) if reply.status_code == 200 else set()

    listed = wait_until(
        lambda: {"farm-igpu@test", "farm-dgpu@test"} <= flower_workers() and flower_workers(),
        60,
        "Flower to list both workers",
    )
    assert {"farm-igpu@test", "farm-dgpu@test"} <= listed


def slow_suite(tmp_path: Path) -> Path:
    path = tmp_path / "slow.yaml"
    path.write_text(f"""
suite: slow
servers:
  - name: slow
    command: ["{{python}}", "{SLOW_SERVER}"]
scenarios:
  - id: slow.summary
    version: 1
    tier: simple
    prompt: Summarise finance report 7.
    servers: [slow]
    time_limit_s: 15
    expect:
      - tool: fetch_summary
        params: {{report_id: "7"}}
""")
    return path


def test_a_worker_killed_mid_trial_loses_nothing_and_duplicates_nothing(
    farm: Farm, tmp_path: Path
) -> None:
    script = [
        {"call": {"name": "fetch_summary", "arguments": {"report_id": "7"}}},
        {"answer": "Revenue was 1,200."},
    ]
    sweep = {
        "name": "kill-check",
        "models": [scripted("slowpoke", "cpu", script)],
        "prompts": ["native"],
        "scenarios": {"suites": [str(slow_suite(tmp_path))]},
        "repetitions": 1,
    }
    visibility = {"FARM_VISIBILITY_TIMEOUT_S": "20"}
    farm.env |= visibility
    sweep_id = farm.submit(farm.sweep_file(tmp_path, sweep))
    first = farm.worker("cpu", "farm-cpu-1@test")
    wait_until(lambda: counts(farm, sweep_id).get("running"), 60, "the trial to start")
    farm.stop(first, signal.SIGKILL)  # the whole worker: main process, pool, MCP servers
    assert counts(farm, sweep_id) == {"running": 1}

    farm.worker("cpu", "farm-cpu-2@test")
    wait_until(lambda: counts(farm, sweep_id).get("done"), 90, "the redelivered trial")
    rows = farm.rows(
        "select outcome, attempts, node, trial_id from trial where sweep_id = :s", s=sweep_id
    )
    assert len(rows) == 1
    outcome, attempts, node, trial_id = rows[0]
    assert (outcome, attempts, node) == ("pass", 2, "farm-cpu-2@test")
    assert farm.rows("select count(*) from tool_call where trial_id = :t", t=trial_id)[0][0] == 1


def test_a_sweep_submitted_before_any_worker_completes_once_one_enrols(
    farm: Farm, tmp_path: Path
) -> None:
    sweep_id = farm.submit(farm.sweep_file(tmp_path, two_model_sweep("late", repetitions=1)))
    assert counts(farm, sweep_id) == {"pending": 4}
    # Submitting again records and publishes nothing more.
    again = farm.cli("sweep", "submit", str(tmp_path / "late.yaml")).stdout
    assert "already submitted" in again
    queued = redis.Redis.from_url(farm.broker_url)
    assert queued.llen("farm.hw.igpu") == queued.llen("farm.hw.dgpu") == 2

    farm.worker("igpu,dgpu", "farm-both@test")
    wait_until(lambda: counts(farm, sweep_id) == {"done": 4}, 90, "all four trials")


def test_cancel_skips_what_has_not_run_and_resume_runs_exactly_that(
    farm: Farm, tmp_path: Path
) -> None:
    sweep_id = farm.submit(farm.sweep_file(tmp_path, two_model_sweep("cancel", repetitions=2)))
    assert "cancelled 8 pending" in farm.cli("sweep", "cancel", sweep_id).stdout
    farm.worker("igpu,dgpu", "farm-both@test")
    queued = redis.Redis.from_url(farm.broker_url)
    wait_until(
        lambda: queued.llen("farm.hw.igpu") + queued.llen("farm.hw.dgpu") == 0,
        60,
        "the worker to drain the cancelled messages",
    )
    assert counts(farm, sweep_id) == {"cancelled": 8}
    assert farm.rows("select max(attempts) from trial")[0][0] == 0

    assert "re-published 8" in farm.cli("sweep", "resume", sweep_id).stdout
    wait_until(lambda: counts(farm, sweep_id) == {"done": 8}, 90, "the resumed trials")
    assert farm.rows("select max(attempts) from trial")[0][0] == 1
    assert "re-published 0" in farm.cli("sweep", "resume", sweep_id).stdout


def test_an_endpoint_that_stays_down_is_retried_then_recorded_as_infra_error(
    farm: Farm, tmp_path: Path
) -> None:
    down = {
        "id": "down",
        "adapter": "openai",
        "model": "nothing",
        "endpoint": f"http://127.0.0.1:{free_port()}/v1",
        "hardware": "cpu",
    }
    sweep = {
        "name": "down",
        "models": [down, scripted("fine", "cpu", [{"answer": "nothing to do"}])],
        "prompts": ["native"],
        "scenarios": {"ids": [BUDGET.id]},
        "repetitions": 1,
    }
    path = farm.sweep_file(tmp_path, sweep)
    # The endpoint check stops such a sweep at submission; past it, the workers' retries are
    # what this test is about.
    refused = farm.cli("sweep", "submit", str(path), check=False)
    assert refused.returncode == 2 and "nothing answers at" in refused.stderr
    assert farm.rows("select count(*) from trial")[0][0] == 0
    submitted = farm.cli("sweep", "submit", str(path), "--no-preflight").stdout
    sweep_id = submitted.split(":", 1)[0].strip()
    farm.worker("cpu", "farm-cpu@test", FARM_INFRA_RETRIES="2")
    wait_until(lambda: counts(farm, sweep_id) == {"done": 2}, 90, "both trials")
    rows = dict(
        (model, (outcome, attempts))
        for model, outcome, attempts in farm.rows(
            "select model_id, outcome, attempts from trial where sweep_id = :s", s=sweep_id
        )
    )
    assert rows["down"] == ("infra_error", 3)  # the first try and two retries
    assert rows["fine"] == ("no_tool_call", 1)  # a model failure: recorded once, never retried


def test_dry_run_counts_per_queue_and_an_undeclared_tag_is_refused(
    farm: Farm, tmp_path: Path
) -> None:
    dry = farm.cli(
        "sweep", "submit", str(farm.sweep_file(tmp_path, two_model_sweep())), "--dry-run"
    )
    assert "farm.hw.igpu │      6" in dry.stdout and "farm.hw.dgpu │      6" in dry.stdout
    assert farm.rows("select count(*) from trial")[0][0] == 0

    spec = two_model_sweep("bad-tag")
    spec["models"][0]["hardware"] = "tpu"
    bad = farm.cli("sweep", "submit", str(farm.sweep_file(tmp_path, spec)), check=False)
    assert bad.returncode == 2
    assert "'tpu', which has no queue" in bad.stderr
    assert farm.rows("select count(*) from trial")[0][0] == 0


def test_resuming_an_embedded_sweep_is_refused_and_changes_nothing(
    farm: Farm, tmp_path: Path
) -> None:
    spec = two_model_sweep("embedded", repetitions=1)
    for model in spec["models"]:
        model["script"] = [{"answer": "no tools today"}]
    sweep = farm.sweep_file(tmp_path, spec)
    ran = farm.cli("run", str(sweep), "--db", farm.db_url)
    assert "embedded" in ran.stdout
    sweep_id = farm.rows("select sweep_id from sweep")[0][0]
    with farm.engine.begin() as conn:
        conn.execute(text("update trial set status = 'cancelled'"))
    refused = farm.cli("sweep", "resume", sweep_id, check=False)
    assert refused.returncode == 2 and "farm run SWEEP.yaml" in refused.stderr
    assert counts(farm, sweep_id) == {"cancelled": 4}
