"""A worker killed while an agent trial runs: the agent's process group and the recording
proxy go with it (no orphan keeps running, the proxy's port is free), and once a worker is
back the sweep completes with every trial and every tool call recorded once."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import pytest

from tests.distributed.conftest import Farm, wait_until
from tests.distributed.test_agents import SCENARIOS, agent_sweep, scenario_of
from tests.distributed.test_farm import counts
from tests.faults.test_faults import running_on, trial_rows
from tests.helpers import ideal_script
from tests.workers.agent.test_guard import end_group, live_members

pytestmark = pytest.mark.faults


def refused(port: int) -> bool:
    """Whether nothing listens on the loopback port any more."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return False
    except ConnectionRefusedError:
        return True


def calls_per_scenario(farm: Farm, sweep_id: str) -> dict[str, int]:
    rows = farm.rows(
        "select trial.scenario_id, count(tool_call.idx) from trial left join tool_call "
        "using (trial_id) where trial.sweep_id = :s group by 1",
        s=sweep_id,
    )
    return {scenario: n for scenario, n in rows}


def test_a_worker_killed_mid_agent_trial_leaves_no_agent_behind_and_loses_nothing(
    fault_farm: Farm, tmp_path: Path
) -> None:
    farm = fault_farm
    hold = tmp_path / "hold"
    sweep = agent_sweep(tmp_path, "agent-kill", FARM_AGENT_HOLD=str(hold))
    sweep_id = farm.submit(farm.sweep_file(tmp_path, sweep))
    doomed = farm.worker("cpu", "farm-a@test", "--concurrency", "1")
    # The first agent to make a call says where it is, then holds still until killed.
    found = wait_until(lambda: hold.exists() and hold.read_text(), 120, "an agent's call")
    pgid, port = map(int, found.split())
    try:
        assert live_members(pgid) and not refused(port)
        held = running_on(farm, sweep_id, "farm-a@test")
        assert len(held) == 1
        farm.stop(doomed, signal.SIGKILL)  # the worker's own group: main process and pool
        wait_until(lambda: not live_members(pgid), 30, "the agent's process group to end")
    except BaseException:
        end_group(pgid)
        raise
    wait_until(lambda: refused(port), 30, "the proxy's port to be free")

    farm.worker("cpu", "farm-b@test", "--concurrency", "1")
    wait_until(lambda: counts(farm, sweep_id) == {"done": 3}, 180, "every trial recorded")

    rows = trial_rows(farm, sweep_id)
    assert {outcome for outcome, _ in rows.values()} == {"pass"}
    # The held trial ran once more; no other trial ran twice.
    assert {t: attempts for t, (_, attempts) in rows.items() if attempts != 1} == {
        t: 2 for t in held
    }
    expected = {
        scenario_id: sum("call" in item for item in ideal_script(scenario_of(suite, scenario_id)))
        for suite, scenario_id in SCENARIOS.items()
    }
    assert calls_per_scenario(farm, sweep_id) == expected
