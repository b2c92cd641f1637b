"""Stands in for a Python MCP server the farm starts over stdio, while the server itself runs
as a fork of a warm interpreter (workers/mcp/launch/zygote.py).

Run by path as `python -I -S relay.py FOLDER -- SERVER_ARGV...`: standard library only, so it
starts in milliseconds. It hands its stdin, stdout and stderr to the zygote, which forks the
server onto them; it then forwards the signals it gets to the server and exits as the server
did. When there is no zygote yet (or it refuses), it asks for one to be started for the next
server and becomes the server the ordinary way (exec), so a start never waits for a zygote.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
HANDOVER_S = 10.0
"""How long the relay waits for the zygote to fork the server before starting it itself."""


def main(argv: list[str]) -> None:
    folder, server = Path(argv[0]), argv[2:]
    conn = _connect(folder)
    if conn is None:
        _start_zygote(folder)
        _become(server)
    assert conn is not None
    pid = _hand_over(conn, server)
    if pid is None:
        conn.close()
        _become(server)
    assert pid is not None
    for sig in SIGNALS:
        signal.signal(sig, lambda signum, _frame: _forward(pid, signum))
    code = _wait_for_exit(conn)
    if code is None:  # the zygote went away: the server may not outlive it unwatched
        _forward(pid, signal.SIGKILL)
        os._exit(1)
    _exit_as(code)


def socket_path(folder: Path) -> Path:
    return folder / "zygote.sock"


def _private(folder: Path) -> bool:
    """The folder exists, is this user's, and nobody else may enter it."""
    try:
        info = folder.stat()
    except OSError:
        return False
    return info.st_uid == os.getuid() and not info.st_mode & 0o077


def _connect(folder: Path) -> socket.socket | None:
    """The zygote's socket, if one is serving in a folder only this user can enter."""
    if not _private(folder):
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(socket_path(folder)))
    except OSError:
        conn.close()
        return None
    return conn


def _hand_over(conn: socket.socket, server: list[str]) -> int | None:
    """Send the server's command, working folder, environment and our three standard file
    descriptors; the server's process id, or None where the zygote refused."""
    request = json.dumps({"argv": server, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    fds = array.array("i", [0, 1, 2])
    # A zygote that does not answer in time (stopped, swamped) is passed by: the server starts
    # the ordinary way, and the zygote, finding this connection closed, ends any fork it made.
    conn.settimeout(HANDOVER_S)
    try:
        conn.sendmsg(
            [len(request).to_bytes(4, "big"), request],
            [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)],
        )
        reply = _line(conn)
    except OSError:
        return None
    conn.settimeout(None)
    word, _, value = reply.partition(" ")
    return int(value) if word == "pid" else None


def _line(conn: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1)
        if not chunk:
            return ""
        data += chunk
    return data.decode().strip()


def _forward(pid: int, signum: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signum)


def _wait_for_exit(conn: socket.socket) -> int | None:
    """The server's exit status, or None when the zygote went away first."""
    try:
        reply = _line(conn)
    except OSError:
        return None
    word, _, value = reply.partition(" ")
    return int(value) if word == "exit" else None


def _exit_as(code: int) -> None:
    """Exit with the server's status; a server ended by a signal ends this process the same way."""
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


def _start_zygote(folder: Path) -> None:
    """Ask for a zygote in the background; any failure leaves the ordinary start."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return
    if not _private(folder):
        return  # never a zygote where another user could reach its socket
    try:
        log = open(folder / "zygote.log", "ab")  # noqa: SIM115 - handed to the child
    except OSError:
        return
    with log:
        try:
            subprocess.Popen(
                [sys.executable, "-I", str(Path(__file__).with_name("zygote.py")), str(folder)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                cwd="/",
                start_new_session=True,
            )
        except OSError:
            return


def _become(server: list[str]) -> None:
    os.execv(server[0], server)


if __name__ == "__main__":
    main(sys.argv[1:])
