"""An agent's guard: the agent gets exactly the environment the worker gives it and exits as it
would unguarded; when the worker that started it dies, its whole process group dies too."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio

from mcp_farm.workers.agent import process
from tests.distributed.conftest import wait_until


def live_members(pgid: int) -> list[int]:
    """The processes of group `pgid` still running (a zombie, killed and not yet reaped, is
    not)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            state, _ppid, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
            if int(group) == pgid and state != "Z":
                found.append(int(stat.parent.name))
    return found


def end_group(pgid: int) -> None:
    """A failed test leaves no held agent running (killed one by one: only what still runs
    in the group, never a group id the test has not seen alive)."""
    for pid in live_members(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


DYING_WORKER = """
import anyio, os, signal, sys
from pathlib import Path
from mcp_farm.workers.agent import process

async def main():
    agent = "import os, subprocess, sys, time; subprocess.Popen(['sleep', '600']); " \\
        "print(os.getpgid(0), flush=True); time.sleep(600)"
    proc = await process.start([sys.executable, "-c", agent], Path.cwd(), dict(os.environ))
    print((await proc.stdout.receive()).decode().strip(), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # the worker dies without ending its agent

anyio.run(main)
"""


def test_an_agents_process_group_dies_with_the_worker_that_started_it(tmp_path: Path) -> None:
    died = subprocess.run(
        [sys.executable, "-c", DYING_WORKER],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert died.returncode == -9, died.stderr
    pgid = int(died.stdout.split()[0])
    try:
        wait_until(lambda: not live_members(pgid), 20, "the agent's group to end")
    except BaseException:
        end_group(pgid)
        raise


async def _run(argv: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    proc = await process.start(argv, Path.cwd(), env)
    assert proc.stdout is not None
    out = b"".join([chunk async for chunk in proc.stdout])
    code = await proc.wait()
    process.kill(proc)
    await proc.aclose()
    return code, out


def test_a_guarded_agent_gets_exactly_its_environment_and_exits_as_it_would() -> None:
    env = {"PATH": os.environ["PATH"], "ODD": "a=b\nc"}
    assert anyio.run(_run, ["env"], env) == (0, b"PATH=" + env["PATH"].encode() + b"\nODD=a=b\nc\n")
    assert anyio.run(_run, ["sh", "-c", "exit 3"], env)[0] == 3
    assert anyio.run(_run, ["sh", "-c", "kill -TERM $$"], env)[0] == -15
    # A signal Python ignores (SIGPIPE) is the agent's default again, as from a shell. Only
    # that bit is read: a lane started in the background by a shell ignores SIGINT and SIGQUIT,
    # and the agent inherits those as any child would.
    ignored = anyio.run(_run, ["grep", "SigIgn", "/proc/self/status"], env)[1]
    assert not int(ignored.split()[-1], 16) & 1 << (signal.SIGPIPE - 1)
