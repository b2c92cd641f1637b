"""A warm interpreter that forks Python MCP servers, so a start does not pay the MCP SDK's
import (about half a second of CPU) each time.

Run by path as `python -I zygote.py FOLDER` (workers/mcp/launch/relay.py starts it). It imports
the SDK only, never the farm or a server: each forked child imports its server as a fresh
`python -m MODULE` or `python SCRIPT` would, from the working folder the relay names, so
edited code is always what runs. One zygote serves every process of this user on the
machine; it leaves when the SDK on disk changes or after IDLE_S with nothing to serve.

Protocol on FOLDER/zygote.sock, per relay connection: the relay sends a 4-byte length and a
JSON request (argv, cwd, env) with its stdin, stdout and stderr attached; the zygote answers
`pid N` once the server is forked (or `refused WHY`), then `exit CODE` when it ends. A relay
that goes away takes its server with it. FOLDER/server-RELAYPID holds the server's process id
while it runs, so the farm can read the CPU time of the server behind a relay.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import runpy
import selectors
import signal
import socket
import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

IDLE_S = 600.0
"""How long the zygote stays with no server running and no request."""

PRELOAD = ("mcp", "mcp.server.mcpserver", "mcp.server.stdio", "mcp.types", "anyio", "pydantic")


def main(folder: Path) -> None:
    lock = open(folder / "zygote.lock", "a")  # noqa: SIM115 - held for the zygote's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another zygote serves this folder
    for stale in folder.glob("server-*"):  # left by a zygote that was killed
        stale.unlink(missing_ok=True)
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    sdk = _sdk_stamp()
    path = folder / "zygote.sock"  # relay.socket_path: a script cannot import its sibling
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(64)
    try:
        _serve(folder, listener, path, sdk)
    finally:
        with contextlib.suppress(OSError):
            if path.stat().st_ino == os.fstat(listener.fileno()).st_ino:
                path.unlink()


def _sdk_stamp() -> float:
    import mcp

    return Path(str(mcp.__file__)).stat().st_mtime


def _serve(folder: Path, listener: socket.socket, path: Path, sdk: float) -> None:
    """Serve until idle; once the SDK on disk changed, take no new server and leave when the
    running ones have ended (a relay whose zygote is gone ends its server)."""
    # Each running server's pid -> (its relay's connection, the relay's pid).
    running: dict[int, tuple[socket.socket, int]] = {}
    last = time.monotonic()
    stop: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    # A child's exit wakes the loop (through this pair), so it is reaped and reported at once.
    wake, woken = socket.socketpair()
    woken.setblocking(False)
    signal.set_wakeup_fd(woken.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    with selectors.DefaultSelector() as sel:
        sel.register(listener, selectors.EVENT_READ, None)
        sel.register(wake, selectors.EVENT_READ, 0)
        while not stop and (running or time.monotonic() - last < IDLE_S):
            for key, _ in sel.select(1.0):
                if key.data == 0:
                    wake.recv(4096)
                    continue
                last = time.monotonic()
                if key.data is None:
                    conn, _ = listener.accept()
                    if not _start(folder, conn, listener, sdk, running, sel):
                        sel.unregister(listener)
                        path.unlink(missing_ok=True)
                        last = -IDLE_S  # leave once the running servers have ended
                else:  # a relay's connection became readable: it went away
                    _relay_gone(key.data, running, sel)
            _reap(folder, running, sel)
            if running and last >= 0:
                last = time.monotonic()


def _start(
    folder: Path,
    conn: socket.socket,
    listener: socket.socket,
    sdk: float,
    running: dict[int, tuple[socket.socket, int]],
    sel: selectors.BaseSelector,
) -> bool:
    """Fork the server a relay asks for; False once the SDK on disk has changed."""
    relay_pid, uid, _gid = struct.unpack(
        "3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    )
    fds: list[int] = []
    try:
        conn.settimeout(5)
        request, fds = _receive(conn)
        if uid != os.getuid() or len(fds) != 3:
            raise ValueError("a request from another user, or without three descriptors")
        if _sdk_stamp() != sdk:
            # The relay starts the server itself, and the next one a zygote on the new SDK.
            conn.sendall(b"refused the MCP SDK on disk changed\n")
            conn.close()
            return False
        pid = _fork(request, fds, conn, listener, running)
    except (OSError, ValueError, KeyError) as exc:
        with contextlib.suppress(OSError):
            conn.sendall(f"refused {type(exc).__name__}\n".encode())
        conn.close()
        return True
    finally:
        for fd in fds:
            os.close(fd)
    running[pid] = (conn, relay_pid)
    try:
        (folder / f"server-{relay_pid}").write_text(str(pid))
        conn.sendall(f"pid {pid}\n".encode())
        conn.settimeout(None)
    except OSError:  # the relay went away meanwhile (or gave up waiting): so does the server
        _end(pid)
        conn.close()
        return True
    sel.register(conn, selectors.EVENT_READ, pid)
    return True


def _end(pid: int) -> None:
    """Kill a forked server and whatever it started (its group, once it has made one)."""
    for kill in (os.kill, os.killpg):
        with contextlib.suppress(OSError):
            kill(pid, signal.SIGKILL)


MAX_REQUEST = 1 << 20
"""The largest request a relay may send (a command line and an environment)."""


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        if len(data) > MAX_REQUEST:
            raise ValueError("the request is too long")
        more = conn.recv(1 << 16)
        if not more:
            raise ValueError("the request ended early")
        data += more
    request: dict[str, Any] = json.loads(data[4 : 4 + int.from_bytes(data[:4], "big")])
    return request, fds


def _relay_gone(
    pid: int, running: dict[int, tuple[socket.socket, int]], sel: selectors.BaseSelector
) -> None:
    """The relay was killed (it never writes after its request): its server goes too. It is
    reaped, and its file removed, by _reap."""
    _end(pid)
    conn, _relay_pid = running[pid]
    sel.unregister(conn)
    conn.close()


def _reap(
    folder: Path, running: dict[int, tuple[socket.socket, int]], sel: selectors.BaseSelector
) -> None:
    for pid, code in ended_children():
        found = running.pop(pid, None)
        if found is None:
            continue
        conn, relay_pid = found
        (folder / f"server-{relay_pid}").unlink(missing_ok=True)
        if conn.fileno() >= 0:
            sel.unregister(conn)
            with contextlib.suppress(OSError):
                conn.sendall(f"exit {code}\n".encode())
            conn.close()


def ended_children() -> Iterator[tuple[int, int]]:
    """Reap every child that has ended, without waiting: (pid, exit code; minus the signal
    that ended it)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, os.waitstatus_to_exitcode(status)


def _fork(
    request: dict[str, Any],
    fds: list[int],
    conn: socket.socket,
    listener: socket.socket,
    running: dict[int, tuple[socket.socket, int]],
) -> int:
    argv: list[str] = request["argv"]
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        listener.close()
        conn.close()
        for other, _relay in running.values():
            other.close()
        take_over(fds, request["cwd"], request["env"])
        code = _run(argv)
    finally:
        os._exit(code)


def take_over(fds: list[int], cwd: str, env: dict[str, str]) -> None:
    """Make this freshly forked child what a new process would be: a session of its own (as
    the SDK gives a server it starts, so a group kill reaches all it starts), `fds` as its
    standard streams, no other descriptor of its parent's (the zygote's lock above all: a
    server holding it would keep the next zygote from starting), and the working folder and
    environment asked for. The parent's objects that wrapped the closed descriptors live in
    frames the child never returns to, so nothing closes them twice."""
    os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    time.tzset()


def _run(argv: list[str]) -> int:
    """What `python -m MODULE ARGS` or `python SCRIPT ARGS` runs, in this forked process."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # Streams of its own on the three descriptors, as a fresh interpreter opens them.
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    code = 0
    try:
        if argv[1] == "-m":
            sys.argv = [argv[2], *argv[3:]]
            sys.path[0:0] = [os.getcwd()]
            runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
        else:
            sys.argv = argv[1:]
            sys.path[0:0] = [str(Path(argv[1]).resolve().parent)]
            runpy.run_path(argv[1], run_name="__main__")
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
    except BaseException:  # the top level of the process: reported as Python would
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        import atexit

        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    return code


if __name__ == "__main__":
    main(Path(sys.argv[1]))
