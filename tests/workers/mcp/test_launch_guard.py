"""The forked server start holds against another local user, stale code and inherited state
(workers/mcp/launch/): only this user's zygote in a folder closed to others is ever handed a
server (checked by descriptor and by the peer's credentials), a zygote steps aside when what it
imported changed on disk, a forked server gets its relay's process state, the relay exits as
its server did and passes USR1/USR2 on, an unresponsive zygote costs one bounded wait, and
zygotes reap their children and leave no folders behind. Each test runs its own zygote in a
folder of its own."""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import resource
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_farm.workers.mcp.launch.prefork import RELAY, runtime_base
from mcp_farm.workers.mcp.launch.relay import open_private, through

pytestmark = pytest.mark.integration

PROCSTATE = Path(__file__).resolve().parents[2] / "servers" / "procstate.py"
OTHER_USER = "mcp-farm-other"


def _wait(check: Callable[[], Any], seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out after {seconds:g} s waiting for {what}")


def relay_argv(folder: Path, *server: str, python: str = sys.executable) -> list[str]:
    return [python, "-I", "-S", str(RELAY), str(folder), "--", python, *server]


def _zygote_pid(folder: Path) -> int | None:
    try:
        return int((folder / "zygote.lock").read_text())
    except (OSError, ValueError):
        return None


def _serving(folder: Path) -> bool:
    """A zygote listens in `folder`; reached through the folder's descriptor as the relay
    reaches it (a test folder's path can be longer than a socket address may be)."""
    dirfd = open_private(folder)
    if dirfd is None:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(through(dirfd, "zygote.sock"))
    except OSError:
        return False
    finally:
        os.close(dirfd)
    return True


def _said(argv: list[str], **kwargs: Any) -> dict[str, Any]:
    done = subprocess.run(
        argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, **kwargs
    )
    assert done.returncode == 0, done.stderr
    said: dict[str, Any] = json.loads(done.stdout.splitlines()[0])
    return said


@pytest.fixture
def zygotes() -> Iterator[Callable[[Path, str], int]]:
    """Start a zygote in a folder (its first relay starts the server itself and asks for
    one); every zygote started is stopped at the end."""
    started: list[int] = []

    def start(folder: Path, python: str = sys.executable) -> int:
        _said(relay_argv(folder, str(PROCSTATE), python=python))
        _wait(lambda: _serving(folder), 60, "the zygote to listen")
        pid: int = _wait(lambda: _zygote_pid(folder), 10, "the zygote's pid")
        started.append(pid)
        return pid

    yield start
    for pid in started:
        try:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        _wait(lambda pid=pid: not Path(f"/proc/{pid}").exists() or _zombie(pid), 30, "a zygote")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    made = tmp_path / "z"
    made.mkdir(mode=0o700)
    return made


def test_a_forked_server_takes_on_its_relays_umask_limits_nice_and_signals(
    zygotes: Callable[[Path], int], folder: Path
) -> None:
    zygote = zygotes(folder)  # started by a relay with this process's own state

    def different() -> None:
        os.umask(0o077)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 200), min(hard, 300)))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0) + 3)
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:1])
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])

    fresh = _said([sys.executable, str(PROCSTATE)], preexec_fn=different)
    forked = _said(relay_argv(folder, str(PROCSTATE)), preexec_fn=different)
    assert forked["parent"] == zygote  # it was forked, not started by the relay itself
    for key in ("pid", "parent", "hash"):
        fresh.pop(key), forked.pop(key)
    assert forked == fresh
    assert fresh["umask"] == 0o077 and fresh["sigint"] == str(signal.SIG_IGN)


def test_the_relay_exits_as_a_server_killed_by_a_signal_without_a_traceback(
    zygotes: Callable[[Path], int], folder: Path
) -> None:
    zygote = zygotes(folder)
    proc = subprocess.Popen(
        relay_argv(folder, str(PROCSTATE), "--hold"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        server = json.loads(proc.stdout.readline())
        assert server["parent"] == zygote
        os.kill(server["pid"], signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
        assert proc.stderr.read() == b""
    finally:
        proc.kill()
        proc.wait(timeout=10)
    # The zygote reaped its child: no zombie stays behind.
    _wait(lambda: not [c for c in _children(zygote) if _zombie(c)], 10, "the zygote to reap")


def test_sigusr1_sent_to_the_relay_reaches_the_server(
    zygotes: Callable[[Path], int], folder: Path, tmp_path: Path
) -> None:
    zygote = zygotes(folder)
    said = tmp_path / "usr1.txt"
    proc = subprocess.Popen(
        relay_argv(folder, str(PROCSTATE), "--on-usr1", str(said)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline())["parent"] == zygote
        proc.send_signal(signal.SIGUSR1)
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert said.read_text() == str(signal.SIGUSR1.value)


def test_the_relay_that_starts_a_zygote_does_not_leave_it_as_its_servers_child(
    zygotes: Callable[[Path], int], folder: Path
) -> None:
    proc = subprocess.Popen(
        relay_argv(folder, str(PROCSTATE), "--hold"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        server = json.loads(proc.stdout.readline())
        assert server["pid"] == proc.pid  # no zygote yet: the relay became the server
        zygote = _wait(lambda: _zygote_pid(folder), 60, "the zygote to start")
        assert zygote not in _children(proc.pid)  # else it would be a zombie once it left
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait(timeout=10)
    zygotes(folder)  # stopped at the end


def test_a_stopped_zygote_costs_one_bounded_wait_and_never_gets_the_streams(
    zygotes: Callable[[Path], int], folder: Path, tmp_path: Path
) -> None:
    zygote = zygotes(folder)
    os.kill(zygote, signal.SIGSTOP)
    outs = [tmp_path / f"out-{n}.txt" for n in range(3)]
    try:
        for out in outs:
            with out.open("w") as sink:
                done = subprocess.run(
                    relay_argv(folder, str(PROCSTATE)),
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    timeout=60,
                )
            assert done.returncode == 0
        assert (folder / "stalled").exists()  # later relays did not wait for it again
    finally:
        os.kill(zygote, signal.SIGCONT)
    # Woken, the zygote takes the first relay's request, finds the relay gone and ends its
    # fork before the fork touched the streams; then it serves again.
    (folder / "stalled").unlink()
    assert _said(relay_argv(folder, str(PROCSTATE)))["parent"] == zygote
    for out in outs:  # each holds the one line of the server its relay became
        lines = out.read_text().splitlines()
        assert len(lines) == 1 and json.loads(lines[0])["parent"] == os.getpid()


def _venv_with_probe(tmp_path: Path) -> tuple[str, Path]:
    """A virtual environment that sees the farm's packages (through a .pth file) and whose
    every interpreter imports `farm_probe_mod` at start (a .pth import line): the zygote
    imports it, as it imports the MCP SDK."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "farm.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (site / "farm_probe_mod.py").write_text("VALUE = 1\n")
    (site / "probe.pth").write_text("import farm_probe_mod\n")
    return python, site


def test_a_zygote_steps_aside_when_a_module_it_imported_changed_on_disk(
    zygotes: Callable[..., int], folder: Path, tmp_path: Path
) -> None:
    python, site = _venv_with_probe(tmp_path)
    zygote = zygotes(folder, python)
    argv = relay_argv(folder, str(PROCSTATE), "--module", "farm_probe_mod", python=python)
    before = _said(argv)
    assert before["parent"] == zygote and before["modules"] == {"farm_probe_mod": 1}
    (site / "farm_probe_mod.py").write_text("VALUE = 2  # upgraded in place\n")
    after = _said(argv)
    assert after["modules"] == {"farm_probe_mod": 2}
    assert after["parent"] != zygote  # started fresh, while a new zygote comes up
    _wait(lambda: _zygote_pid(folder) not in (None, zygote), 60, "a new zygote")
    zygotes(folder, python)  # the new one is stopped at the end too
    again = _said(argv)
    assert again["parent"] not in (zygote, os.getpid()) and again["modules"]["farm_probe_mod"] == 2


def test_a_package_installed_through_a_pth_file_after_the_zygote_started_imports(
    zygotes: Callable[..., int], folder: Path, tmp_path: Path
) -> None:
    python, site = _venv_with_probe(tmp_path)
    zygotes(folder, python)
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "farm_extra_mod.py").write_text("VALUE = 'installed'\n")
    (site / "extra.pth").write_text(f"{extra}\n")
    said = _said(relay_argv(folder, str(PROCSTATE), "--module", "farm_extra_mod", python=python))
    assert said["modules"] == {"farm_extra_mod": "installed"}


def test_a_zygote_removes_its_folder_when_it_leaves_and_gone_zygotes_folders_beside_it(
    zygotes: Callable[[Path], int], tmp_path: Path
) -> None:
    base = tmp_path / "base"
    base.mkdir(mode=0o700)
    uid = os.getuid()
    gone, held = base / f"mcp-farm-{uid}-aaaaaaaaaaaa", base / f"mcp-farm-{uid}-bbbbbbbbbbbb"
    for old in (gone, held):
        old.mkdir(mode=0o700)
        (old / "zygote.log").write_text("old\n")
        (old / "zygote.lock").write_text("1\n")
        os.utime(old, (time.time() - 3600, time.time() - 3600))
    with (held / "zygote.lock").open("r") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as a running zygote holds it
        mine = base / f"mcp-farm-{uid}-cccccccccccc"
        pid = zygotes(mine)
        assert not gone.exists() and held.exists()
    os.kill(pid, signal.SIGTERM)
    _wait(lambda: not mine.exists(), 30, "the zygote's folder to be removed")


def test_a_relay_does_not_follow_a_symbolic_link_to_a_zygote_folder(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    dirfd = open_private(real)
    assert dirfd is not None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as fake:
        fake.bind(through(dirfd, "zygote.sock"))
        os.close(dirfd)
        fake.listen(4)
        fake.settimeout(0.5)
        said = _said(relay_argv(link, str(PROCSTATE)))
        assert said["parent"] == os.getpid()  # the relay became the server
        with pytest.raises(TimeoutError):
            fake.accept()  # and never knocked
    assert sorted(p.name for p in real.iterdir()) == ["zygote.sock"]  # no zygote put there


ATTACKER = """
import socket, sys
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(sys.argv[1])
listener.listen(4)
print("ready", flush=True)
listener.settimeout(30)
got = b""
try:
    conn, _ = listener.accept()
    conn.settimeout(5)
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        got += chunk
except OSError:
    pass
print(len(got), "SECRET-VALUE" in got.decode(errors="replace"), flush=True)
"""


def _other_user() -> pwd.struct_passwd:
    """A second local user for the attack; made where this runs as root."""
    try:
        return pwd.getpwnam(OTHER_USER)
    except KeyError:
        pass
    if os.getuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("needs root and useradd to make a second local user")
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER_USER],
        check=False,
        capture_output=True,
    )
    return pwd.getpwnam(OTHER_USER)


def test_another_local_user_serving_the_zygote_socket_gets_nothing(
    zygotes: Callable[[Path], int],
) -> None:
    """Another user's process answering on the zygote's socket (here moved into place by
    root: the state a swapped symbolic link gave the relay) receives not a byte: the relay
    checks the peer's credentials first, and starts the server itself."""
    other = _other_user()
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("needs a system python3 the second user can run")
    shared = Path(tempfile.mkdtemp(prefix="farm-attack-", dir="/tmp"))
    try:
        shared.chmod(0o777)
        victim = shared / "victim"
        victim.mkdir(mode=0o700)
        planted = shared / "planted.sock"
        attacker = subprocess.Popen(
            [python, "-I", "-c", ATTACKER, str(planted)],
            user=other.pw_uid,
            group=other.pw_gid,
            stdout=subprocess.PIPE,
            text=True,
            cwd="/",
        )
        try:
            assert attacker.stdout is not None
            assert attacker.stdout.readline().strip() == "ready"
            planted.rename(victim / "zygote.sock")
            env = {**os.environ, "FARM_TEST_TOKEN": "SECRET-VALUE"}
            said = _said(relay_argv(victim, str(PROCSTATE)), env=env)
            assert said["parent"] == os.getpid()  # started by the relay itself
            received, leaked = attacker.stdout.readline().split()
            assert (int(received), leaked) == (0, "False")
        finally:
            attacker.kill()
            attacker.wait(timeout=10)
        # The relay asked for a zygote of its own there; it replaced the planted socket.
        _wait(lambda: _serving(victim), 60, "the victim's own zygote")
        pid = _wait(lambda: _zygote_pid(victim), 10, "the victim's zygote's pid")
        os.kill(pid, signal.SIGTERM)
        _wait(lambda: not victim.exists(), 30, "the victim's zygote to leave")
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_the_runtime_folder_is_the_users_private_one_where_it_is_safe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    private = tmp_path / "run"
    private.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(private))
    assert runtime_base() == private
    opened = tmp_path / "open"
    opened.mkdir(mode=0o755)
    opened.chmod(0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(opened))
    assert runtime_base() == Path(tempfile.gettempdir())
    link = tmp_path / "link"
    link.symlink_to(private)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(link))
    assert runtime_base() == Path(tempfile.gettempdir())
