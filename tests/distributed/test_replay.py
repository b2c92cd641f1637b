"""`farm replay --submit`: a recorded sweep's calls replayed by the farm's workers, on the `cpu`
queue whatever hardware the recorded model had; `farm replay` again lists the changes once the
replay is done, and `--rerun --submit` replays it once more."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from tests.distributed.conftest import Farm, wait_until
from tests.scheduler.cli.test_replay import SCRIPT, suite

pytestmark = pytest.mark.integration


def states(farm: Farm, sweep_id: str) -> list[tuple[str, str | None]]:
    return [
        (status, outcome)
        for status, outcome in farm.rows(
            "select status, outcome from trial where sweep_id = :s", s=sweep_id
        )
    ]


def test_a_replay_submitted_to_the_farm_runs_on_a_cpu_worker_and_lists_its_changes_once_done(
    farm: Farm, tmp_path: Path
) -> None:
    sweep = {
        "name": "recorded",
        "models": [
            {
                "id": "ideal",
                "adapter": "scripted",
                "model": "x",
                "hardware": "igpu",
                "script": SCRIPT,
            }
        ],
        "prompts": ["native"],
        "scenarios": {"suites": [str(suite(tmp_path, 1))]},
        "repetitions": 1,
    }
    sweep_id = farm.submit(farm.sweep_file(tmp_path, sweep))
    igpu = farm.worker("igpu", "farm-igpu@test")
    wait_until(lambda: states(farm, sweep_id) == [("done", "pass")], 90, "the recording")
    farm.stop(igpu)

    suite(tmp_path, 2)  # the server as it is defined now
    submitted = farm.cli("replay", sweep_id, "--submit").stdout
    assert "published 1 replay trials to farm.hw.cpu" in submitted
    [(replay_id, queue)] = farm.rows(
        "select sweep_id, queue from trial where sweep_id != :s", s=sweep_id
    )
    assert queue == "farm.hw.cpu"
    assert redis.Redis.from_url(farm.broker_url).llen("farm.hw.cpu") == 1
    waiting = farm.cli("replay", sweep_id).stdout  # no cpu worker yet: nothing runs here
    assert f"not finished: 0/1 trials of {replay_id} done" in waiting
    assert states(farm, replay_id) == [("pending", None)]

    farm.worker("cpu", "farm-cpu@test")
    wait_until(lambda: states(farm, replay_id)[0][0] == "done", 90, "the replay")
    assert farm.rows("select worker_tag from trial where sweep_id = :s", s=replay_id) == [("cpu",)]
    done = farm.cli("replay", sweep_id).stdout
    assert "ideal · native · orders.cancel #0: pass → wrong_params" in done
    assert "call 2 cancel_order: now fails: " in done
    status = farm.cli("sweep", "status", replay_id).stdout
    assert f"replay of {sweep_id}: measures the servers, not the model" in status

    suite(tmp_path, 1)  # the server fixed again
    again = farm.cli("replay", sweep_id, "--rerun", "--submit").stdout
    assert "published 1 replay trials to farm.hw.cpu" in again
    wait_until(lambda: states(farm, replay_id) == [("done", "pass")], 90, "the second replay")
    assert "no change: all 1 trials answered as recorded" in farm.cli("replay", sweep_id).stdout
