"""Stands in for a Python MCP server the farm starts over stdio, while the server itself runs
as a fork of a warm interpreter (workers/mcp/launch/zygote.py).

Run by path as `python -I -S relay.py FOLDER -- SERVER_ARGV...`: standard library only, so it
starts in milliseconds. It hands its stdin, stdout and stderr to the zygote, with the process
state a fresh server would inherit from it (umask, resource limits, nice, CPU affinity, ignored
and blocked signals), and the zygote forks the server onto them; the relay then forwards the
signals it gets to the server and exits as the server did. When there is no zygote yet, or it
refuses or does not answer in time, the relay asks for one to be started for the next server
and becomes the server the ordinary way (exec), so a start never waits long for a zygote.

Nobody else may stand in for the zygote: FOLDER is opened without following a symbolic link
and must be this user's with no access for others (checked on the open descriptor), the socket
is reached through that descriptor, and the process that answers on it must be this user's
(SO_PEERCRED) before a byte of the request (which carries the server's environment) is sent.
The zygote loads this file too, for the same folder checks.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import resource
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TERMINATING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""Signals that end a server: sent to its process group, as the SDK ends a server it started."""
PASSED_ON = (signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH)
"""Other signals a server may act on: sent to the server's process alone."""
CONNECT_S = 1.0
"""How long the relay waits for the zygote's socket to take its connection."""
HANDOVER_S = 3.0
"""How long the relay waits for the zygote to fork the server before starting it itself."""
STALLED_S = 30.0
"""After a zygote did not answer in time, relays start servers themselves for this long
without asking it (a stopped zygote costs one wait, not one per start)."""
STALLED = "stalled"
SOCKET = "zygote.sock"


def main(argv: list[str]) -> None:
    state = process_state()  # first: before this process changes any of it
    folder, server = Path(argv[0]), argv[2:]
    dirfd = open_private(folder)
    if dirfd is not None and _stalled(dirfd):
        _become(server)  # the zygote there did not answer lately: not waited for again yet
    conn = None if dirfd is None else _connect(dirfd)
    if conn is None:
        if dirfd is None or not _stalled(dirfd):
            _start_zygote(folder)
        _become(server)
    assert conn is not None and dirfd is not None
    pid = _hand_over(conn, server, state)
    conn.settimeout(None)
    if pid is None:  # no answer in time: relays pass this zygote by for a while
        _mark_stalled(dirfd)
    elif isinstance(pid, str):  # refused: where it stepped aside, the next start needs one
        _start_zygote(folder)
    if not isinstance(pid, int):
        conn.close()
        _become(server)
    assert isinstance(pid, int)
    os.close(dirfd)
    for sig in TERMINATING:
        signal.signal(sig, lambda signum, _frame: _forward(pid, signum, group=True))
    for sig in PASSED_ON:
        signal.signal(sig, lambda signum, _frame: _forward(pid, signum, group=False))
    code = _wait_for_exit(conn)
    if code is None:  # the zygote went away: the server may not outlive it unwatched
        _forward(pid, signal.SIGKILL, group=True)
        os._exit(1)
    _exit_as(code)


def socket_path(folder: Path) -> Path:
    return folder / SOCKET


def open_private(folder: Path) -> int | None:
    """A descriptor of `folder` if it is a real folder (not a symbolic link), this user's, and
    closed to everyone else; None otherwise. The checks are made on the descriptor, so a name
    swapped after the check changes nothing: everything after goes through the descriptor."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        os.close(fd)
        return None
    return fd


def through(dirfd: int, name: str) -> str:
    """The path of `name` in the folder open as `dirfd`, reached through the descriptor (a
    socket cannot be bound or reached relative to a descriptor any other way)."""
    return f"/proc/self/fd/{dirfd}/{name}"


def peer(conn: socket.socket) -> tuple[int, int]:
    """The process id and user id of the process at the other end of a unix socket."""
    pid, uid, _gid = struct.unpack(
        "3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    )
    return pid, uid


def _connect(dirfd: int) -> socket.socket | None:
    """The zygote's socket, if this user's process serves it. Never an unbounded wait: a
    stopped zygote's full backlog refuses at once, and is marked stalled."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(CONNECT_S)
    try:
        conn.connect(through(dirfd, SOCKET))
        if peer(conn)[1] != os.getuid():
            raise PermissionError("the socket is served by another user")
    except (BlockingIOError, TimeoutError):
        _mark_stalled(dirfd)
        conn.close()
        return None
    except OSError:
        conn.close()
        return None
    return conn


def process_state() -> dict[str, Any]:
    """What a fresh server would inherit from this process besides its command line,
    environment, folder and streams."""
    limits = {}
    for name in dir(resource):
        if name.startswith("RLIMIT_"):
            with contextlib.suppress(OSError, ValueError):
                limits[name] = list(resource.getrlimit(getattr(resource, name)))
    masks = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("SigIgn", "SigBlk"):
                bits = int(value, 16)
                masks[key] = [n for n in range(1, signal.NSIG) if bits >> (n - 1) & 1]
    umask = os.umask(0o077)
    os.umask(umask)
    return {
        "umask": umask,
        "limits": limits,
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "affinity": sorted(os.sched_getaffinity(0)),
        "ignored": masks.get("SigIgn", []),
        "blocked": masks.get("SigBlk", []),
    }


def _hand_over(conn: socket.socket, server: list[str], state: dict[str, Any]) -> int | str | None:
    """Send the server's command, working folder, environment, process state and our three
    standard file descriptors. The server's process id; the zygote's reason where it refused;
    None where it did not answer in time. Once we have the id we say `go`: only then does the
    fork touch the streams, so a relay that gave up and became the server itself never shares
    them with a late fork."""
    request = {"argv": server, "cwd": os.getcwd(), "env": dict(os.environ), "state": state}
    data = json.dumps(request).encode()
    conn.settimeout(HANDOVER_S)
    try:
        conn.sendmsg(
            [len(data).to_bytes(4, "big"), data],
            [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))],
        )
        word, _, value = read_line(conn).partition(" ")
        if word != "pid":
            return value or "no answer"
        conn.sendall(b"go\n")
    except TimeoutError:
        return None
    except OSError as exc:
        return str(exc)
    return int(value)


def read_line(conn: socket.socket, limit: int = 1 << 16) -> str:
    """One line from the other end (at most `limit` bytes); empty when it closed first."""
    data = b""
    while not data.endswith(b"\n") and len(data) < limit:
        chunk = conn.recv(1)
        if not chunk:
            return ""
        data += chunk
    return data.decode(errors="replace").strip()


def _forward(pid: int, signum: int, *, group: bool) -> None:
    with contextlib.suppress(OSError):
        (os.killpg if group else os.kill)(pid, signum)


def _wait_for_exit(conn: socket.socket) -> int | None:
    """The server's exit status, or None when the zygote went away first."""
    try:
        reply = read_line(conn)
    except OSError:
        return None
    word, _, value = reply.partition(" ")
    return int(value) if word == "exit" else None


def _exit_as(code: int) -> None:
    """Exit with the server's status; a server ended by a signal ends this process the same
    way (a signal whose default is to be ignored, or that cannot end us: 128 + its number)."""
    if code < 0:
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP keep theirs
            signal.signal(-code, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [-code])
        os.kill(os.getpid(), -code)
        os._exit(128 + -code)
    os._exit(code & 0xFF)


def _stalled(dirfd: int) -> bool:
    """A relay found the zygote unresponsive a short while ago."""
    try:
        info = os.stat(STALLED, dir_fd=dirfd, follow_symlinks=False)
    except OSError:
        return False
    return time.time() - info.st_mtime < STALLED_S


def _mark_stalled(dirfd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(os.open(STALLED, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600, dir_fd=dirfd))
        os.utime(STALLED, dir_fd=dirfd, follow_symlinks=False)


def _start_zygote(folder: Path) -> None:
    """Ask for a zygote in the background; any failure leaves the ordinary start. The folder
    is made by this user, closed to others; one already there is used only if it passes the
    same checks. The zygote is started by a short-lived child, so it is nobody's child here:
    this process becomes the server, which would never reap it."""
    with contextlib.suppress(FileExistsError, OSError):
        os.mkdir(folder, 0o700)
    dirfd = open_private(folder)
    if dirfd is None:
        return  # never a zygote where another user could reach its socket
    try:
        log = os.open(
            "zygote.log",
            os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW,
            0o600,
            dir_fd=dirfd,
        )
    except OSError:
        os.close(dirfd)
        return
    os.close(dirfd)
    try:
        child = os.fork()
    except OSError:
        os.close(log)
        return
    if child == 0:
        code = 0
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
            code = 1
        os._exit(code)
    os.close(log)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(child, 0)


def _become(server: list[str]) -> None:
    os.execv(server[0], server)


if __name__ == "__main__":
    main(sys.argv[1:])
