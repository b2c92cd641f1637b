"""`farm view` and `farm trials` on a distributed farm (PostgreSQL, Redis, a worker) while a
sweep is still running: live progress, and the trials already done open as in embedded mode."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.distributed.conftest import ROOT, Farm, wait_until
from tests.distributed.test_farm import counts, two_model_sweep
from tests.scheduler.view.conftest import served_url

pytestmark = pytest.mark.integration


def test_a_running_sweep_is_browsed_with_live_progress(farm: Farm, tmp_path: Path) -> None:
    sweep_id = farm.submit(farm.sweep_file(tmp_path, two_model_sweep("browse", repetitions=1)))
    # Only the igpu model is served: its trials finish, the dgpu model's stay pending.
    farm.worker("igpu", "farm-igpu@test")
    wait_until(lambda: counts(farm, sweep_id) == {"done": 2, "pending": 2}, 90, "igpu trials")

    view = subprocess.Popen(
        [sys.executable, "-m", "mcp_farm.scheduler.cli.app", "view", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=farm.env,
        cwd=ROOT,
    )
    try:
        url = served_url(view)
        with httpx.Client(base_url=url, timeout=30) as web:
            sweeps = web.get("/").text
            assert "2/4" in sweeps and "running" in sweeps
            assert 'http-equiv="refresh"' in sweeps, "a running sweep's list does not reload"
            # The card is built off the request: the page says so and reloads until it is.
            scorecard = wait_until(
                lambda: (
                    (r := web.get(f"/sweeps/{sweep_id}")).status_code == 200
                    and "Per model" in r.text
                    and r
                ),
                60,
                "the running sweep's scorecard",
            )
            assert "small-igpu" in scorecard.text and "2/4" in scorecard.text
            pending = web.get(f"/sweeps/{sweep_id}/trials", params={"status": "pending"}).text
            assert pending.count('href="/trials/') == 2 and "large-dgpu" in pending
            done = web.get(f"/sweeps/{sweep_id}/trials", params={"outcome": "pass"}).text
            trial_id = re.findall(r'href="/trials/([0-9a-f]+)"', done)[0]
            transcript = web.get(f"/trials/{trial_id}").text
            assert "search_files" in transcript and "read_file" in transcript
            assert "farm-igpu@test" in transcript, "the node that ran it is not shown"
    finally:
        view.terminate()
        view.wait(timeout=30)
    listed = farm.cli("trials", sweep_id, "--status", "pending").stdout
    assert listed.count("large-dgpu") == 2 and "2 trial(s)" in listed
    assert counts(farm, sweep_id) == {"done": 2, "pending": 2}, "viewing changed the sweep"
