"""Which stdio servers start as forks of a warm interpreter, and the command that does it.

A server run by the farm's own interpreter as `python -m MODULE ...` or `python SCRIPT.py ...`
(every fixture server, and the launchers of third-party ones) is started through a relay
(workers/mcp/launch/relay.py) that has the machine's zygote (zygote.py) fork it: the child
skips the MCP SDK's import, most of a server's start-up. The server sees the same command
line, environment, working folder and standard streams; the SDK's client sees the relay as
the server's process (its exit status is the server's, its signals reach the server). Any
other command, a server whose environment sets PYTHON* variables, or a platform without
/proc and fork, starts the ordinary way; so does every server with `FARM_SERVER_FORK=false`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from mcp_farm.schema import ServerStart
from mcp_farm.workers.mcp.launch.relay import open_private
from mcp_farm.workers.startclock import tree_cpu

RELAY = Path(__file__).with_name("relay.py")


@lru_cache(maxsize=1)
def zygote_folder() -> Path:
    """One folder per user and interpreter (a virtual environment's own, not the one it links
    to): every farm process of the user on that interpreter shares a zygote. It lies in the
    user's private runtime folder ($XDG_RUNTIME_DIR) where there is one, else in the temporary
    folder; the relay makes it closed to others and never follows a link to it."""
    key = hashlib.sha256(os.path.abspath(sys.executable).encode())
    key.update(RELAY.with_name("zygote.py").read_bytes())  # an edited zygote is a new one
    return runtime_base() / f"mcp-farm-{os.getuid()}-{key.hexdigest()[:12]}"


def runtime_base() -> Path:
    """$XDG_RUNTIME_DIR when it is a real folder of this user's closed to others, else the
    temporary folder."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        fd = open_private(Path(runtime))
        if fd is not None:
            os.close(fd)
            return Path(runtime)
    return Path(tempfile.gettempdir())


def relayed(argv: list[str], env: dict[str, str]) -> list[str] | None:
    """The relay's command for a server that may start as a fork, else None."""
    if not hasattr(os, "fork") or not Path("/proc/self/stat").exists() or len(argv) < 2:
        return None
    if os.path.abspath(argv[0]) != os.path.abspath(sys.executable):
        return None
    is_module = argv[1] == "-m" and len(argv) > 2
    if not (is_module or argv[1].endswith(".py")):
        return None
    if any(name.startswith("PYTHON") for name in env):
        return None
    return [sys.executable, "-I", "-S", str(RELAY), str(zygote_folder()), "--", *argv]


def server_pid(relay_pid: int) -> int | None:
    """The forked server behind a relay, while it runs (None for a server started fresh)."""
    dirfd = open_private(zygote_folder())
    if dirfd is None:
        return None
    try:
        fd = os.open(f"server-{relay_pid}", os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dirfd)
        try:
            return int(os.read(fd, 64))
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return None
    finally:
        os.close(dirfd)


def started_as(pid: int | None, relayed: bool) -> ServerStart:
    """How the server behind process `pid` (a relay where `relayed`) started, while it runs:
    a relay that became the server itself (no zygote, or one that refused) was a fresh start."""
    return "forked" if relayed and pid is not None and server_pid(pid) is not None else "fresh"


def relay_cpu(relay_pid: int) -> float:
    """CPU seconds of a relay and of the server it stands for (the server is no child of the
    relay: the zygote forked it); OSError when the relay is gone."""
    used = tree_cpu(relay_pid)
    server = server_pid(relay_pid)
    if server is not None:
        with contextlib.suppress(OSError):
            used += tree_cpu(server)
    return used
