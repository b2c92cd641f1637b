"""A server's start-up is the farm's work, not the scenario's: it is never charged to the
scenario's `time_limit_s`, and its own limit counts the server's CPU time, so a machine busy
with other work does not turn a slow start into a failed one."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from mcp_farm.scenarios.catalog import server_catalog
from mcp_farm.workers.mcp.connections import connect
from mcp_farm.workers.mcp.pool import ServerPool
from mcp_farm.workers.startclock import spawned_child, start_deadline, tree_cpu

pytestmark = pytest.mark.integration


def test_a_servers_start_up_is_not_charged_to_the_scenarios_clock(tmp_path: Path) -> None:
    notes = server_catalog()["notes"]

    async def main() -> bool:
        async with anyio.create_task_group() as tg:
            pool = ServerPool(tg, tmp_path / "pool", 60)
            # A clock far shorter than any Python server's start-up: it runs out only if the
            # start-up is charged to it.
            with anyio.CancelScope(deadline=anyio.current_time() + 0.01) as clock:
                async with connect([notes], pool, "plain", clock=clock) as conn:
                    assert "create_note" in conn.tools
            pool.close()
            tg.cancel_scope.cancel()
        return clock.cancelled_caught

    assert anyio.run(main) is False


def test_the_start_up_limit_counts_cpu_time_not_time_spent_waiting() -> None:
    used = [0.0]

    def cpu(_pid: int) -> float:
        return used[0]

    async def main() -> None:
        # The server gets CPU time slowly (a busy machine): many polls pass, far more wall
        # time than its limit of 1 CPU second, and the start-up still completes.
        async with start_deadline(lambda: 1, 1.0, cpu=cpu):
            for _ in range(12):
                used[0] += 0.05
                await anyio.sleep(0.25)

    anyio.run(main)


def test_a_start_up_past_its_cpu_limit_is_a_timeout() -> None:
    used = [0.0]

    def cpu(_pid: int) -> float:
        used[0] += 0.5
        return used[0]

    async def main() -> None:
        async with start_deadline(lambda: 1, 1.0, cpu=cpu):
            await anyio.sleep_forever()

    with pytest.raises(TimeoutError, match="used 1 s of CPU time"):
        anyio.run(main)


def test_the_cpu_time_of_this_process_and_its_spawned_child_can_be_read() -> None:
    assert tree_cpu(os.getpid()) > 0
    assert spawned_child({4242}, ["x"]) == 4242
    assert spawned_child(set(), ["x"]) is None
