"""Stands between the worker and an agent's command, so the agent never outlives the worker.

Run by path as `python -I -S guard.py FD -- COMMAND...` in a session of its own, where FD is one
end of a socket pair whose other end the worker holds. It imports only built-in modules, so it
starts in a few milliseconds. The worker sends the agent's environment (`pack_env`); the guard
starts the command in its own process group (the agent's group) with it and answers `ok`, or
`error …` when the command could not be started (missing, not executable). Then it waits for
the agent and exits as the agent did. Should the worker die first (killed, out of memory: its
end of the pair closes), the guard kills its whole process group, the agent and all it started
with it. The worker's own kill at a time limit is a kill of that group too
(workers/agent/process.py).
"""

from __future__ import annotations

import _thread
import os
import signal
import sys

RESTORED = ("SIGPIPE", "SIGXFZ", "SIGXFSZ")
"""Signals Python ignores, given back their default before the command starts (as the
subprocess module does), so the agent starts as it would from a shell."""


def pack_env(env: dict[str, str]) -> bytes:
    """The agent's environment as the worker sends it: its length, a newline, then each
    `NAME=VALUE` followed by a NUL (which no variable can hold). Never on the command line,
    where any user could read a secret."""
    block = "".join(f"{name}={value}\0" for name, value in env.items()).encode("utf-8")
    return f"{len(block)}\n".encode() + block


def _env(link: int) -> dict[str, str]:
    data = b""
    while True:
        size, newline, block = data.partition(b"\n")
        if newline and len(block) >= int(size):
            break
        chunk = os.read(link, 1 << 16)
        if not chunk:
            os._exit(1)  # the worker went away before sending it: nothing to start
        data += chunk
    return dict(entry.split("=", 1) for entry in block.decode("utf-8").split("\0") if entry)


def _spawn(command: list[str], env: dict[str, str]) -> tuple[int, str]:
    """The agent's pid, and why it could not be started (empty when it started)."""
    failed_r, failed_w = os.pipe()  # close-on-exec: EOF alone says the command started
    pid = os.fork()
    if pid == 0:
        os.close(failed_r)
        for name in RESTORED:
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        try:
            os.execvpe(command[0], command, env)
        except OSError as exc:
            # Not the path last tried along PATH: the worker names the command.
            os.write(failed_w, f"[Errno {exc.errno}] {exc.strerror}".encode("utf-8", "replace"))
        os._exit(127)
    os.close(failed_w)
    why = b""
    while chunk := os.read(failed_r, 1 << 12):
        why += chunk
    os.close(failed_r)
    if why:
        os.waitpid(pid, 0)
    return pid, why.decode("utf-8", "replace")


def _watch(link: int) -> None:
    """Once the worker's end closes (it ended the agent, or it died), end the whole group."""
    try:
        while os.read(link, 1 << 12):
            pass
    except OSError:
        pass
    os.killpg(0, signal.SIGKILL)


def _exit_as(status: int) -> None:
    """Exit as the agent did: its status, or the signal that ended it."""
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        if -code not in (signal.SIGKILL, signal.SIGSTOP):  # these keep their default
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        os._exit(128 - code)
    os._exit(code & 0xFF)


def main(argv: list[str]) -> None:
    link = int(argv[0])
    os.set_inheritable(link, False)  # the agent never holds the worker's lifeline
    pid, why = _spawn(argv[2:], _env(link))
    try:
        os.write(link, f"error {why}\n".encode() if why else b"ok\n")
    except OSError:
        os.killpg(0, signal.SIGKILL)  # the worker is gone: so is its agent
    if why:
        os._exit(127)
    _thread.start_new_thread(_watch, (link,))
    _exit_as(os.waitpid(pid, 0)[1])


if __name__ == "__main__":
    main(sys.argv[1:])
