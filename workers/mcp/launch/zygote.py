"""A warm interpreter that forks Python MCP servers, so a start does not pay the MCP SDK's
import (about half a second of CPU) each time.

Run by path as `python -I zygote.py FOLDER` (workers/mcp/launch/relay.py starts it). It imports
the SDK only, never the farm or a server: each forked child imports its server as a fresh
`python -m MODULE` or `python SCRIPT` would, from the working folder the relay names, so
edited server code is always what runs. One zygote serves every process of this user on the
machine (per interpreter). It steps aside (takes no new server, lets a new zygote start, and
leaves once its running servers have ended) when any file it imported, or any folder on its
import path, changed on disk since it started (an upgraded package, a new `.pth` file), or
when it cannot give a child the process state its relay asked for; it leaves after IDLE_S with
nothing to serve, removing its folder, and removes folders of this user's gone zygotes.

Protocol on FOLDER/zygote.sock, per relay connection (only this user's relays are served:
SO_PEERCRED): the relay sends a 4-byte length and a JSON request (argv, cwd, env, state) with
its stdin, stdout and stderr attached. The zygote forks; the child takes on the relay's
process state (umask, resource limits, nice, CPU affinity, ignored and blocked signals) and
says so, or why it cannot; the zygote answers `pid N` (or `refused WHY`); the relay answers
`go`, and only then does the child take the streams and run the server; the zygote sends
`exit CODE` when it ends. A relay that goes away takes its server with it.
FOLDER/server-RELAYPID holds the server's process id while it runs, so the farm can read the
CPU time of the server behind a relay (and tell a forked start from a fresh one).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import resource
import runpy
import select
import selectors
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

IDLE_S = 600.0
"""How long the zygote stays with no server running and no request."""
GONE_AFTER_S = 60.0
"""A folder of this user's zygotes with no zygote holding its lock, untouched this long, is
removed by the next zygote that starts beside it."""
ANSWER_S = 5.0
"""How long the zygote waits on a relay (its request, its `go`) or on its fresh child."""
MAX_REQUEST = 1 << 20
"""The largest request a relay may send (a command line and an environment)."""

PRELOAD = ("mcp", "mcp.server.mcpserver", "mcp.server.stdio", "mcp.types", "anyio", "pydantic")


def _relay() -> ModuleType:
    """The relay's module, for its folder checks (a script run by path cannot import its
    sibling by name)."""
    spec = importlib.util.spec_from_file_location(
        "farm_relay", Path(__file__).with_name("relay.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Zygote:
    """One zygote's folder, lock, listening socket and running servers."""

    def __init__(self, folder: Path, dirfd: int, lock: int, relay: ModuleType) -> None:
        self.folder, self.dirfd, self.lock, self.relay = folder, dirfd, lock, relay
        self.listener: socket.socket | None = None
        self.stamp: dict[str, tuple[int, int]] = {}
        self.running: dict[int, tuple[socket.socket, int]] = {}
        """Each running server's pid -> (its relay's connection, the relay's pid)."""
        self.sel = selectors.DefaultSelector()

    def listen(self) -> None:
        self.stamp = code_stamp()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.relay.SOCKET, dir_fd=self.dirfd)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.relay.through(self.dirfd, self.relay.SOCKET))
        listener.listen(64)
        self.listener = listener
        self.sel.register(listener, selectors.EVENT_READ, None)

    def step_aside(self, why: str) -> None:
        """Take no new server; a relay starts the next zygote (our lock is let go)."""
        print(f"zygote {os.getpid()} steps aside: {why}", file=sys.stderr, flush=True)
        if self.listener is not None:
            self.sel.unregister(self.listener)
            with contextlib.suppress(OSError):
                mine = os.fstat(self.listener.fileno()).st_ino
                if os.stat(self.relay.SOCKET, dir_fd=self.dirfd).st_ino == mine:
                    os.unlink(self.relay.SOCKET, dir_fd=self.dirfd)
            self.listener.close()
            self.listener = None
        if self.lock >= 0:
            os.close(self.lock)
            self.lock = -1

    def leave(self) -> None:
        """Leave nothing behind, unless this zygote stepped aside (the folder is then the next
        zygote's): the lock is let go last, so no zygote starts in a folder being removed."""
        if self.lock < 0:
            return
        if self.listener is not None:
            self.listener.close()
        for name in os.listdir(self.dirfd):
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=self.dirfd)
        with contextlib.suppress(OSError):
            os.rmdir(self.folder)
        os.close(self.lock)


def main(folder: Path) -> None:
    stop: list[int] = []  # a SIGTERM during the imports still lets the zygote clean up
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    relay = _relay()
    dirfd = relay.open_private(folder)
    if dirfd is None:
        return  # never serve where another user could reach the socket
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    lock = os.open("zygote.lock", flags, 0o600, dir_fd=dirfd)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another zygote serves this folder
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    # Left by a zygote that was killed; a relay still running keeps its file (its server is
    # still served by a zygote that stepped aside).
    for name in os.listdir(dirfd):
        if name == relay.STALLED or (
            name.startswith("server-") and not Path(f"/proc/{name[7:]}").exists()
        ):
            os.unlink(name, dir_fd=dirfd)
    remove_gone_siblings(folder, relay)
    for name in PRELOAD:
        importlib.import_module(name)
    zygote = Zygote(folder, dirfd, lock, relay)
    try:
        zygote.listen()
        _serve(zygote, stop)
    finally:
        zygote.leave()


def remove_gone_siblings(folder: Path, relay: ModuleType) -> None:
    """Remove this user's zygote folders beside `folder` that no zygote holds (another
    interpreter's, an edited zygote's) once they have been left alone for GONE_AFTER_S."""
    prefix = folder.name.rsplit("-", 1)[0] + "-"
    with contextlib.suppress(OSError), os.scandir(folder.parent) as entries:
        for entry in entries:
            if entry.name.startswith(prefix) and entry.name != folder.name:
                _remove_if_gone(Path(entry.path), relay)


def _remove_if_gone(folder: Path, relay: ModuleType) -> None:
    dirfd = relay.open_private(folder)
    if dirfd is None:
        return
    try:
        if time.time() - os.fstat(dirfd).st_mtime < GONE_AFTER_S:
            return
        try:
            lock = os.open("zygote.lock", os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
        except FileNotFoundError:
            lock = -1
        try:
            if lock >= 0:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            for name in os.listdir(dirfd):
                os.unlink(name, dir_fd=dirfd)
            os.rmdir(folder)
        except OSError:
            return  # a zygote holds it, or something else is in it
        finally:
            if lock >= 0:
                os.close(lock)
    finally:
        os.close(dirfd)


def code_stamp() -> dict[str, tuple[int, int]]:
    """Size and modification time of every file this interpreter imported, of every folder
    on its import path and of the `.pth` files in them (a package installed, upgraded or
    removed changes one of these)."""
    paths = {
        f for m in list(sys.modules.values()) if isinstance(f := getattr(m, "__file__", None), str)
    }
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            paths.add(entry)
            with contextlib.suppress(OSError):
                paths.update(
                    os.path.join(entry, n) for n in os.listdir(entry) if n.endswith(".pth")
                )
    stamp = {}
    for path in paths:
        try:
            info = os.stat(path)
            stamp[path] = (info.st_size, info.st_mtime_ns)
        except OSError:
            stamp[path] = (-1, -1)
    return stamp


def changed(before: dict[str, tuple[int, int]]) -> str | None:
    """The first imported file or import folder that changed since `before`, if any."""
    now = code_stamp()
    for path, seen in before.items():
        if now.get(path, seen) != seen:
            return path
    new = sorted(set(now) - set(before) - {p for p in now if not p.endswith(".pth")})
    return new[0] if new else None


def _serve(zygote: Zygote, stop: list[int]) -> None:
    """Serve until idle or told to stop; once stepped aside, until the running servers end."""
    last = time.monotonic()
    # A child's exit wakes the loop (through this pair), so it is reaped and reported at once.
    wake, woken = socket.socketpair()
    woken.setblocking(False)
    signal.set_wakeup_fd(woken.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    zygote.sel.register(wake, selectors.EVENT_READ, 0)
    while not stop:
        if zygote.listener is None and not zygote.running:
            return
        if not zygote.running and time.monotonic() - last >= IDLE_S:
            return
        for key, _ in zygote.sel.select(1.0):
            if key.data == 0:
                wake.recv(4096)
                continue
            last = time.monotonic()
            if key.data is None:
                assert zygote.listener is not None
                conn, _ = zygote.listener.accept()
                _start(zygote, conn)
            else:  # a relay's connection became readable: it went away
                _relay_gone(zygote, key.data)
        _reap(zygote)
        if zygote.running:
            last = time.monotonic()


def _start(zygote: Zygote, conn: socket.socket) -> None:
    """Fork the server a relay asks for, or say why not."""
    fds: list[int] = []
    try:
        conn.settimeout(ANSWER_S)
        relay_pid, uid = zygote.relay.peer(conn)
        if uid != os.getuid():
            raise PermissionError("a request from another user")
        request, fds = _receive(conn)
        if len(fds) != 3:
            raise ValueError("a request without three descriptors")
        if (path := changed(zygote.stamp)) is not None:
            zygote.step_aside(f"{path} changed on disk")
            _refuse(conn, f"the code the zygote imported changed: {path}")
            return
        pid, go = _fork(zygote, request, fds, conn)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _refuse(conn, f"{type(exc).__name__}: {exc}")
        return
    finally:
        for fd in fds:
            os.close(fd)
    try:
        conn.sendall(f"pid {pid}\n".encode())
        if zygote.relay.read_line(conn, 64) != "go":
            raise OSError("the relay gave up")
        name = f"server-{relay_pid}"
        made = os.open(
            name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600, dir_fd=zygote.dirfd
        )
        os.write(made, str(pid).encode())
        os.close(made)
        os.write(go, b"g")
        conn.settimeout(None)
    except OSError:  # the relay went away meanwhile (or gave up waiting): so does the child
        _end(pid)
        conn.close()
        return
    finally:
        os.close(go)
    zygote.running[pid] = (conn, relay_pid)
    zygote.sel.register(conn, selectors.EVENT_READ, pid)


def _refuse(conn: socket.socket, why: str) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(f"refused {why}\n".replace("\n", " ").strip().encode() + b"\n")
    conn.close()


def _end(pid: int) -> None:
    """Kill a forked server and whatever it started (its group, once it has made one)."""
    for kill in (os.kill, os.killpg):
        with contextlib.suppress(OSError):
            kill(pid, signal.SIGKILL)


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


def _relay_gone(zygote: Zygote, pid: int) -> None:
    """The relay was killed (it never writes after its `go`): its server goes too. It is
    reaped, and its file removed, by _reap."""
    _end(pid)
    conn, _relay_pid = zygote.running[pid]
    zygote.sel.unregister(conn)
    conn.close()


def _reap(zygote: Zygote) -> None:
    for pid, code in ended_children():
        found = zygote.running.pop(pid, None)
        if found is None:
            continue
        conn, relay_pid = found
        with contextlib.suppress(OSError):
            os.unlink(f"server-{relay_pid}", dir_fd=zygote.dirfd)
        if conn.fileno() >= 0:
            zygote.sel.unregister(conn)
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
    zygote: Zygote, request: dict[str, Any], fds: list[int], conn: socket.socket
) -> tuple[int, int]:
    """Fork the child; once it has taken on the relay's process state, its pid and the pipe
    that tells it to go on. A child that cannot take it on is ended, and the zygote steps
    aside: a zygote started by that relay can."""
    argv: list[str] = request["argv"]
    said_r, said_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            keep = {*fds, said_w, go_r}
            for name in os.listdir("/proc/self/fd"):
                if int(name) > 2 and int(name) not in keep:
                    with contextlib.suppress(OSError):
                        os.close(int(name))
            try:
                assume(request["state"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                os.write(said_w, f"cannot take on the relay's process state: {exc}\n".encode())
                os._exit(1)
            os.write(said_w, b"ok\n")
            if os.read(go_r, 1) != b"g":
                os._exit(1)
            take_over(fds, request["cwd"], request["env"])
            code = _run(argv)
        finally:
            os._exit(code)
    os.close(said_w)
    os.close(go_r)
    try:
        said = _read_said(said_r)
    finally:
        os.close(said_r)
    if said != "ok":
        os.close(go_w)
        _end(pid)
        zygote.step_aside(said or "its child said nothing")
        raise ValueError(said or "the child said nothing")
    return pid, go_w


def _read_said(fd: int) -> str:
    ready, _, _ = select.select([fd], [], [], ANSWER_S)
    return os.read(fd, 4096).decode(errors="replace").strip() if ready else ""


def assume(state: dict[str, Any]) -> None:
    """Take on what a fresh process would have inherited from the relay: umask, resource
    limits, nice, CPU affinity, and which signals are ignored and blocked (a fresh Python
    also ignores SIGPIPE and SIGXFSZ and turns SIGINT into KeyboardInterrupt)."""
    os.umask(int(state["umask"]))
    for name, (soft, hard) in state["limits"].items():
        which = getattr(resource, name, None)
        if isinstance(which, int) and resource.getrlimit(which) != (soft, hard):
            resource.setrlimit(which, (soft, hard))
    os.setpriority(os.PRIO_PROCESS, 0, int(state["nice"]))
    os.sched_setaffinity(0, state["affinity"])
    ignored = set(state["ignored"]) | {signal.SIGPIPE, signal.SIGXFSZ}
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP) or not 0 < signum < signal.NSIG:
            continue
        with contextlib.suppress(OSError, ValueError):
            if signum in ignored:
                signal.signal(signum, signal.SIG_IGN)
            elif signum == signal.SIGINT:
                signal.signal(signum, signal.default_int_handler)
            else:
                signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, state["blocked"])


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
