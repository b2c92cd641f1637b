"""Run `farm` commands as child processes without paying Python's start-up each time.

Most CPU time of the command-line tests went to importing the farm, the MCP SDK, SQLAlchemy
and the rest in every fresh `python -m mcp_farm.scheduler.cli.app` (about two seconds a command
on the CI machine). Here one process per test process (the zygote) imports all of that once and
forks a child for each command. The child is still a process of its own, with its own argv,
environment, working directory, stdin/stdout/stderr and exit status; only the imported modules
are shared, as they are when unchanged on disk. Nothing that runs at import time reads the
environment (the console's width is set before every command), so a child behaves as a fresh
interpreter would.

`FARM_TEST_FORK=0` runs every command as a fresh interpreter instead, as before.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from mcp_farm.workers.mcp.launch.zygote import ended_children, take_over

ROOT = Path(__file__).resolve().parents[1]
CLI = "mcp_farm.scheduler.cli.app"
WARM = (
    # What the commands under test import lazily, so the children find it loaded.
    CLI,
    "mcp_farm.scheduler.submission.embedded",
    "mcp_farm.scheduler.submission.expand",
    "mcp_farm.scheduler.submission.publish",
    "mcp_farm.scheduler.submission.replay",
    "mcp_farm.scheduler.submission.replay_changes",
    "mcp_farm.scheduler.scorecard.aggregate",
    "mcp_farm.scheduler.scorecard.queries.answers",
    "mcp_farm.scheduler.report.terminal.scorecard",
    "mcp_farm.scheduler.operations.progress",
    "mcp_farm.scheduler.statistics.power",
    "mcp_farm.scenarios.validate",
    "mcp_farm.workers.trial",
    "mcp_farm.schema.db",
    "mcp_farm.schema.tasks.messages",
    "sqlalchemy.dialects.postgresql",
    "sqlalchemy.dialects.sqlite",
    "psycopg",
)


def farm_cli(
    args: list[str] | tuple[str, ...],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    timeout: float = 300,
    stdin: str = "",
) -> subprocess.CompletedProcess[str]:
    """`python -m mcp_farm.scheduler.cli.app *args`, captured as text, like `subprocess.run`."""
    argv = [sys.executable, "-m", CLI, *args]
    environ = dict(os.environ if env is None else env)
    if os.environ.get("FARM_TEST_FORK", "1") == "0":
        return subprocess.run(
            argv, input=stdin, capture_output=True, text=True, env=environ, cwd=cwd,
            timeout=timeout, check=False,
        )  # fmt: skip
    return _zygote().run(argv, environ, str(cwd or os.getcwd()), timeout, stdin)


class _Zygote:
    """The client side: one Unix socket to a process that forks a child per command."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="farm-zygote-")
        self.path = os.path.join(self.folder, "socket")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.forkrun", self.path],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        atexit.register(self.close)

    def _connect(self) -> socket.socket:
        for _ in range(600):  # the zygote imports for a few seconds before it listens
            if self.proc.poll() is not None:
                raise RuntimeError(f"the test zygote exited with {self.proc.returncode}")
            try:
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conn.connect(self.path)
                return conn
            except (FileNotFoundError, ConnectionRefusedError):
                conn.close()
                threading.Event().wait(0.1)
        raise RuntimeError("the test zygote did not listen within 60 s")

    def run(
        self, argv: list[str], env: dict[str, str], cwd: str, timeout: float, stdin: str
    ) -> subprocess.CompletedProcess[str]:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r, in_w = os.pipe()
        conn = self._connect()
        try:
            request = json.dumps({"argv": argv, "env": env, "cwd": cwd}).encode()
            socket.send_fds(conn, [request], [in_r, out_w, err_w])
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        pid = int(_line(conn))
        feeder = threading.Thread(target=_feed, args=(in_w, stdin.encode()), daemon=True)
        feeder.start()
        try:
            out, err = _drain(out_r, err_r, timeout)
        except subprocess.TimeoutExpired:
            _kill(pid)
            conn.close()
            raise subprocess.TimeoutExpired(argv, timeout) from None
        code = int(_line(conn))
        conn.close()
        return subprocess.CompletedProcess(argv, code, out.decode(), err.decode())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        for name in os.listdir(self.folder):
            os.unlink(os.path.join(self.folder, name))
        os.rmdir(self.folder)


_ZYGOTE: _Zygote | None = None


def _zygote() -> _Zygote:
    global _ZYGOTE
    if _ZYGOTE is None or _ZYGOTE.proc.poll() is not None:
        _ZYGOTE = _Zygote()
    return _ZYGOTE


def _line(conn: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(64)
        if not chunk:
            raise RuntimeError("the test zygote closed the connection")
        data += chunk
    return data.decode().strip()


def _feed(fd: int, data: bytes) -> None:
    try:
        os.write(fd, data)
    except BrokenPipeError:
        pass
    finally:
        os.close(fd)


def _drain(out_r: int, err_r: int, timeout: float) -> tuple[bytes, bytes]:
    """Read both pipes to their end (the child and whatever it left running closed them)."""
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    with selectors.DefaultSelector() as sel:
        for fd in chunks:
            sel.register(fd, selectors.EVENT_READ)
        deadline = _now() + timeout
        try:
            while sel.get_map():
                left = deadline - _now()
                if left <= 0:
                    raise subprocess.TimeoutExpired("farm", timeout)
                for key, _ in sel.select(left):
                    data = os.read(key.fd, 65536)
                    if data:
                        chunks[key.fd].append(data)
                    else:
                        sel.unregister(key.fd)
        finally:
            os.close(out_r)
            os.close(err_r)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r])


def _now() -> float:
    return time.monotonic()


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


# ---- the zygote itself: `python -m tests.forkrun SOCKET`


def _serve(path: str) -> None:
    import importlib

    for name in WARM:
        importlib.import_module(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    waiting: dict[int, socket.socket] = {}
    parent = os.getppid()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with selectors.DefaultSelector() as sel:
        sel.register(listener, selectors.EVENT_READ)
        while os.getppid() == parent:  # a test process killed outright leaves no zygote behind
            for _key, _ in sel.select(0.05):
                conn, _ = listener.accept()
                pid = _fork_child(conn, listener)
                conn.sendall(f"{pid}\n".encode())
                waiting[pid] = conn
            _reap(waiting)


def _reap(waiting: dict[int, socket.socket]) -> None:
    for pid, code in ended_children():
        conn = waiting.pop(pid, None)
        if conn is not None:
            with contextlib.suppress(OSError):  # the test gave up on it (a timeout)
                conn.sendall(f"{code}\n".encode())
            conn.close()


def _fork_child(conn: socket.socket, listener: socket.socket) -> int:
    message, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
    request = json.loads(message)
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    code = 1
    try:
        listener.close()
        conn.close()
        # Its own group (a timeout kills it with whatever it started), and the rest of a
        # fresh process's start, as the farm's own zygote does for servers.
        take_over(fds, request["cwd"], request["env"])
        code = _run_cli(request["argv"])
    finally:
        os._exit(code)


def _run_cli(argv: list[str]) -> int:
    """What `python -m mcp_farm.scheduler.cli.app ARGS` runs, in this (forked) process."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    cli = sys.modules[CLI]
    # As `-m` leaves them: argv[0] the module's file, and the module as __main__ (Click names
    # the program from it in usage lines).
    sys.argv = [str(cli.__file__), *argv[3:]]
    sys.modules["__main__"] = cli
    code: int = 0
    try:
        cli.main()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if isinstance(stop.code, str):
            print(stop.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    return code


if __name__ == "__main__":
    _serve(sys.argv[1])
