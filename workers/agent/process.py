"""An agent's process: started in its own process group under a guard, its output read within
bounds, killed whole at its limit or when the worker dies."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from mcp_farm.schema import AgentCommand
from mcp_farm.schema.agent_check import known_values
from mcp_farm.schema.placeholders import PLACEHOLDER
from mcp_farm.schema.trial import AGENT_OUTPUT_BYTES, AgentOutput
from mcp_farm.workers.agent.guard import pack_env
from mcp_farm.workers.errors import InfraError

KEEP_CHARS = 20_000
"""Characters of an agent's stderr (its tail) and of its stdout (its head) kept on the trial."""

LINE_BYTES = 1_000_000
"""The longest line a `jsonl` agent may write."""

BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
"""The worker's variables every agent gets; any other only by `pass_env` (the worker's
environment holds its own secrets: its database's password, its broker's)."""

GUARD = Path(__file__).resolve().with_name("guard.py")

_LIFELINES: dict[int, socket.socket] = {}
"""This process's end of each running agent's guard link, by the guard's pid: while it is
open the agent may live; closed (by `kill`, or by this process's death) the group ends."""


def filled(arg: str, values: Mapping[str, str]) -> str:
    return PLACEHOLDER.sub(
        lambda m: m.group(0) if m.group(2) is not None else values.get(m.group(1), m.group(0)),
        arg,
    )


def agent_env(
    agent: AgentCommand,
    config: Path,
    environ: Mapping[str, str],
    model: tuple[str, str] | None = None,
) -> dict[str, str]:
    """The agent's environment: the base, its own `env`, its `pass_env` from the worker's,
    and FARM_MCP_CONFIG naming the trial's config file; with a model pass-through (its URL
    and the trial's token), OPENAI_BASE_URL and FARM_MODEL_URL naming it and OPENAI_API_KEY
    the token (over any `pass_env` of that name: the pass-through takes no other key)."""
    env = {name: environ[name] for name in BASE_ENV if name in environ}
    env.update(agent.env)
    env.update({name: environ[name] for name in agent.pass_env if name in environ})
    env["FARM_MCP_CONFIG"] = str(config)
    if model is not None:
        url, token = model
        env.update(OPENAI_BASE_URL=url, FARM_MODEL_URL=url, OPENAI_API_KEY=token)
    return env


def placeholder_values(
    config: Path, folder: Path, prompt: str | None, model_url: str | None = None
) -> dict[str, str]:
    # {python} and {root} as preflight fills them in (schema/agent_check.py).
    values = {"mcp_config": str(config), "folder": str(folder), **known_values()}
    if prompt is not None:
        values["prompt"] = prompt
    if model_url is not None:
        values["model_url"] = model_url
    return values


@dataclass
class Output:
    """What an agent wrote: its stdout's head and its stderr's tail, bounded; and, for the
    trial's record, the tail of its stdout over the whole trial."""

    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    """The end of everything it wrote on stdout over the trial (`keep_tail`)."""
    out_seen: int = 0
    err_seen: int = 0

    def keep_err(self, chunk: bytes) -> None:
        self.err_seen += len(chunk)
        self.stderr += chunk
        del self.stderr[: max(0, len(self.stderr) - KEEP_CHARS)]

    def keep_out(self, chunk: bytes) -> None:
        self.stdout += chunk[: max(0, KEEP_CHARS * 50 - len(self.stdout))]

    def keep_tail(self, chunk: bytes | bytearray) -> None:
        """Stdout for the trial's record (a run's answer, a `jsonl` line)."""
        self.out_seen += len(chunk)
        self.tail += chunk
        del self.tail[: max(0, len(self.tail) - AGENT_OUTPUT_BYTES)]

    def err_text(self) -> str:
        return escaped(self.stderr.decode("utf-8", "replace"))

    def record(self) -> AgentOutput:
        """The last AGENT_OUTPUT_BYTES of its stdout and of its stderr, escaped."""
        err = self.stderr[-AGENT_OUTPUT_BYTES:]
        return AgentOutput(
            stdout=escaped(self.tail.decode("utf-8", "replace")),
            stderr=escaped(err.decode("utf-8", "replace")),
            stdout_cut=self.out_seen > len(self.tail),
            stderr_cut=self.err_seen > len(err),
        )


def escaped(text: str) -> str:
    """`text` with control characters (bar newlines and tabs) written as escapes."""
    return "".join(
        ch if ch in "\n\t" or ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


async def start(argv: list[str], cwd: Path, env: dict[str, str]) -> Process:
    """The agent's process, under its guard (workers/agent/guard.py), in a group of its own
    that dies with this process; InfraError when the command cannot run (missing, not
    executable): the command's fault, never the agent's behaviour."""
    ours, theirs = socket.socketpair()
    guarded = [sys.executable, "-I", "-S", str(GUARD), str(theirs.fileno()), "--", *argv]
    try:
        proc = await anyio.open_process(
            guarded, cwd=cwd, env={}, start_new_session=True, pass_fds=[theirs.fileno()]
        )
    except OSError as exc:
        ours.close()
        raise InfraError(f"the agent's command {argv[0]!r} could not be started: {exc}") from None
    finally:
        theirs.close()
    _LIFELINES[proc.pid] = ours
    try:
        reply = await _handshake(ours, env)
    except BaseException:  # cancelled (a time limit) or the guard gone: nothing may stay
        kill(proc)
        raise
    if reply != "ok":
        kill(proc)
        await proc.aclose()
        why = reply.removeprefix("error ") or "its guard ended before starting it"
        raise InfraError(f"the agent's command {argv[0]!r} could not be started: {why}")
    return proc


async def _handshake(link: socket.socket, env: dict[str, str]) -> str:
    """Send the guard the agent's environment; its one-line answer (empty when it ended
    without one)."""
    data = b""
    try:
        link.sendall(pack_env(env))
        while not data.endswith(b"\n"):
            await anyio.wait_readable(link)
            chunk = link.recv(1 << 12)
            if not chunk:
                break
            data += chunk
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()


def kill(proc: Process) -> None:
    """Kill the agent's whole process group (what it started goes with it)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    lifeline = _LIFELINES.pop(proc.pid, None)
    if lifeline is not None:
        lifeline.close()


async def drain(stream: anyio.abc.ByteReceiveStream | None, keep: object) -> None:
    if stream is None:
        return
    assert callable(keep)
    try:
        async for chunk in stream:
            keep(chunk)
    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        return


async def read_line(reader: BufferedByteReceiveStream) -> bytes | None:
    """The agent's next line; None once its stdout closed."""
    try:
        return await reader.receive_until(b"\n", LINE_BYTES)
    except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError):
        return None
