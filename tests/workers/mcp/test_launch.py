"""Python servers started as forks of a warm interpreter (workers/mcp/launch/): the server sees
what a fresh process would see, the relay exits as the server does and passes its signals on,
a killed relay takes its server with it, and the start-up limit counts the forked server's
CPU time."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp_farm.schema import ServerDef
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.connections import connect
from mcp_farm.workers.mcp.launch import relay_cpu, relayed
from mcp_farm.workers.mcp.launch.prefork import server_pid, zygote_folder
from mcp_farm.workers.mcp.launch.relay import socket_path
from mcp_farm.workers.mcp.pool import ServerPool
from mcp_farm.workers.startclock import tree_cpu

pytestmark = pytest.mark.integration

WHOAMI = Path(__file__).resolve().parents[2] / "servers" / "whoami.py"


def _wait(check: Any, seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out after {seconds:g} s waiting for {what}")


def _serving() -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.connect(str(socket_path(zygote_folder())))
        except OSError:
            return False
    return True


@pytest.fixture
def zygote() -> None:
    """A zygote serving: the first relay without one starts the server itself and asks for
    one, so a relayed start that exits at once is enough to bring it up."""
    if not _serving():
        argv = relayed([sys.executable, str(WHOAMI), "--exit", "0"], {})
        assert argv is not None
        subprocess.run(argv, stdin=subprocess.DEVNULL, timeout=60, check=True)
        _wait(_serving, 60, "the zygote to listen")


async def _whoami(argv: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("whoami", {})
    found: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    return found


def test_a_forked_server_sees_what_a_fresh_process_sees(zygote: None, tmp_path: Path) -> None:
    argv = [sys.executable, str(WHOAMI), "--flag", "two words"]
    env = {"WHOAMI_VALUE": "ünïcode value", "HOME": str(tmp_path)}
    fresh = anyio.run(_whoami, argv, tmp_path, env)
    relay = relayed(argv, env)
    assert relay is not None and relay[-4:] == argv
    forked = anyio.run(_whoami, relay, tmp_path, env)
    # A fresh server is the child of the process that started it; a forked one is the
    # zygote's, not its relay's.
    assert fresh.pop("parent") == os.getpid()
    assert forked.pop("parent") not in (os.getpid(), fresh["pid"])
    fresh.pop("pid"), forked.pop("pid")
    assert forked == fresh
    assert fresh["argv"] == ["--flag", "two words"] and fresh["env"] == "ünïcode value"


def test_the_relay_exits_with_the_servers_status(zygote: None) -> None:
    argv = [sys.executable, str(WHOAMI), "--exit", "3"]
    relay = relayed(argv, {})
    assert relay is not None
    done = [subprocess.run(a, stdin=subprocess.DEVNULL, timeout=60) for a in (argv, relay)]
    assert [d.returncode for d in done] == [3, 3]


def test_a_sigterm_to_the_relay_reaches_the_server(zygote: None, tmp_path: Path) -> None:
    said = tmp_path / "term.txt"
    relay = relayed([sys.executable, str(WHOAMI), "--on-term", str(said)], {})
    assert relay is not None
    proc = subprocess.Popen(relay, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        _wait(lambda: server_pid(proc.pid), 30, "the forked server")
        # The server's handler is set before it serves: wait until it answers.
        assert proc.stdin is not None
        proc.stdin.write(_initialize())
        proc.stdin.flush()
        assert proc.stdout is not None and proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
    assert said.read_text() == f"signal {signal.SIGTERM.value}"


def test_a_relay_killed_outright_takes_its_server_with_it(zygote: None) -> None:
    relay = relayed([sys.executable, str(WHOAMI)], {})
    assert relay is not None
    proc = subprocess.Popen(relay, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    pid = _wait(lambda: server_pid(proc.pid), 30, "the forked server")
    assert Path(f"/proc/{pid}").exists()
    proc.kill()
    proc.wait(timeout=10)
    _wait(lambda: not Path(f"/proc/{pid}").exists(), 30, "the server to end")


def test_the_cpu_time_of_a_relay_includes_its_forked_servers(zygote: None) -> None:
    relay = relayed([sys.executable, str(WHOAMI), "--spin", "30"], {})
    assert relay is not None
    proc = subprocess.Popen(relay, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        _wait(lambda: server_pid(proc.pid), 30, "the forked server")
        _wait(lambda: relay_cpu(proc.pid) > 0.5, 60, "the server's CPU time to show")
        assert tree_cpu(proc.pid) < 0.5  # the relay itself does nothing
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_the_start_up_limit_of_a_forked_server_counts_its_cpu_time(
    zygote: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spinning = ServerDef(name="spin", command=["{python}", str(WHOAMI), "--spin", "30"])
    read: list[float] = []

    def counted(pid: int) -> float:
        read.append(relay_cpu(pid))
        return read[-1]

    monkeypatch.setattr("mcp_farm.workers.mcp.pool.session.relay_cpu", counted)

    async def main() -> str:
        async with anyio.create_task_group() as tg:
            pool = ServerPool(tg, tmp_path / "pool", 1.0)
            try:
                async with connect([spinning], pool, "plain"):
                    return "started"
            except InfraError as exc:
                return str(exc)
            finally:
                pool.close()
                tg.cancel_scope.cancel()

    assert "'spin' failed to start" in anyio.run(main)
    # Stopped by the server's CPU time, not after the start-up's wall-time stall limit.
    assert read and read[-1] - read[0] >= 0.9


def test_a_relay_whose_folder_others_can_enter_starts_the_server_itself(tmp_path: Path) -> None:
    folder = tmp_path / "open"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    relay = relayed([sys.executable, str(WHOAMI)], {})
    assert relay is not None
    relay[relay.index("--") - 1] = str(folder)
    found = anyio.run(_whoami, relay, tmp_path, {})
    # The relay became the server (exec): the server is this process's own child.
    assert found["parent"] == os.getpid()
    assert sorted(p.name for p in folder.iterdir()) == []  # and no zygote was started there


@pytest.mark.parametrize(
    ("argv", "env"),
    [
        (["node", "server.js"], {}),
        ([sys.executable, "-c", "print(1)"], {}),
        ([sys.executable, "-u", "server.py"], {}),
        ([sys.executable, "server.py"], {"PYTHONPATH": "/elsewhere"}),
        (["/usr/bin/python3", "server.py"], {}),
    ],
)
def test_other_commands_start_the_ordinary_way(argv: list[str], env: dict[str, str]) -> None:
    assert relayed(argv, env) is None


def test_a_module_or_a_script_of_the_farms_interpreter_is_relayed() -> None:
    for argv in ([sys.executable, "-m", "some.server", "--x"], [sys.executable, "s.py"]):
        relay = relayed(argv, {"HOME": "/home/x"})
        assert relay is not None and relay[-len(argv) :] == argv and relay[0] == sys.executable


def _initialize() -> bytes:
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    return (json.dumps(request) + "\n").encode()


def test_farm_server_fork_false_starts_every_server_fresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_farm.schema import Settings
    from mcp_farm.workers.node.runtime import Runtime

    monkeypatch.setenv("FARM_SERVER_FORK", "false")
    monkeypatch.setenv("FARM_DATA_DIR", str(tmp_path))
    settings = Settings()
    assert settings.server_fork is False
    runtime = Runtime(settings)
    try:
        assert runtime.pool.fork is False
    finally:
        runtime.close()
    monkeypatch.delenv("FARM_SERVER_FORK")
    assert Settings().server_fork is True  # the default


def test_a_trials_connections_say_whether_each_server_was_forked_or_started_fresh(
    zygote: None, tmp_path: Path
) -> None:
    who = ServerDef(name="who", command=["{python}", str(WHOAMI)])

    async def starts(fork: bool) -> tuple[dict[str, str], str]:
        """What the connection says, and what the server itself says: a relay that started
        its server fresh (no zygote answered in time, as on a loaded machine) became it, so
        the server's parent is this process; a forked server's parent is the zygote."""
        async with anyio.create_task_group() as tg:
            pool = ServerPool(tg, tmp_path / f"pool-{fork}", 30.0, fork=fork)
            try:
                async with connect([who], pool, "plain") as conn:
                    result = await conn.call("who", "whoami", {})
                    parent = json.loads(result.content[0].text)["parent"]  # type: ignore[union-attr]
                    return dict(conn.starts), "fresh" if parent == os.getpid() else "forked"
            finally:
                pool.close()
                tg.cancel_scope.cancel()

    said, seen = anyio.run(starts, True)
    assert said == {"who": seen}
    assert anyio.run(starts, False) == ({"who": "fresh"}, "fresh")
