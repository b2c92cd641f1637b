"""Time a fixture server's start, started fresh and started as a fork of the warm interpreter.

    .venv/bin/python -m bench.server_start [--starts 20] [--server filesystem]

Each start is what a trial on a server of its own pays: a new pool, the server started,
`initialize` and `tools/list` answered, the session closed and the server stopped. The two
ways take turns, so a machine whose load changes affects both alike; the zygote is started
before the first timed start. Prints, per way, the median and 90th-percentile wall time of a
start and the CPU time the whole machine spent during a start (read from /proc/stat: run it
on an otherwise idle machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import anyio
from rich.console import Console
from rich.table import Table

from mcp_farm.scenarios.catalog import server_catalog
from mcp_farm.schema import ServerDef
from mcp_farm.workers.mcp.connections import connect
from mcp_farm.workers.mcp.pool import ServerPool

console = Console()


async def _start(server: ServerDef, root: Path, fork: bool) -> tuple[float, float]:
    """Wall seconds of one start to a listed tool list and back, and the machine's CPU seconds."""
    began, busy = time.perf_counter(), _busy()
    async with anyio.create_task_group() as tg:
        pool = ServerPool(tg, root, 60, fork=fork)
        async with connect([server], pool, "plain") as conn:
            assert conn.tools
        pool.close()
    return time.perf_counter() - began, _busy() - busy


_TICK = os.sysconf("SC_CLK_TCK")


def _busy() -> float:
    """CPU seconds the machine has spent on anything but idling, since it started."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / _TICK


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=20, help="timed starts of each way")
    parser.add_argument("--server", default="filesystem", help="a fixture server's name")
    args = parser.parse_args()
    server = server_catalog()[args.server]
    found: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        anyio.run(_start, server, root / "warm", True)  # brings the zygote up
        anyio.run(_start, server, root / "warm", True)
        with console.status(f"{args.starts} starts of {args.server}, each way…"):
            for i in range(args.starts):
                for fork in (False, True):
                    found[fork].append(anyio.run(_start, server, root / f"{fork}-{i}", fork))
    table = Table(title=f"starting `{args.server}` ({args.starts} starts each, taking turns)")
    for column in ("start", "wall p50", "wall p90", "machine CPU p50"):
        table.add_column(column, justify="right" if column != "start" else "left")
    for fork, label in ((False, "fresh interpreter"), (True, "fork of the warm one")):
        walls = sorted(w for w, _ in found[fork])
        cpus = [c for _, c in found[fork]]
        p90 = walls[min(len(walls) - 1, int(0.9 * len(walls)))]
        table.add_row(
            label,
            f"{statistics.median(walls) * 1000:.0f} ms",
            f"{p90 * 1000:.0f} ms",
            f"{statistics.median(cpus) * 1000:.0f} ms",
        )
    console.print(table)


if __name__ == "__main__":
    main()
