"""An `agent` target as the system under test: the farm serves the trial's servers through its
recording proxy, writes the `mcpServers` config file, and runs the agent's command for each user
message (docs/agents.md)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

import mcp_farm.workers.agent.process as process
from mcp_farm.schema import AgentCommand, Message, ModelTarget, PromptConfig, Scenario
from mcp_farm.schema.trial import TranscriptCall
from mcp_farm.workers.agent.passthrough import (
    PassThrough,
    endpoint_fault,
    measure,
    passing_through,
)
from mcp_farm.workers.agent.process import KEEP_CHARS, Output
from mcp_farm.workers.agent.proxy import (
    Recorder,
    announce,
    loop_limit,
    serving,
    write_config,
)
from mcp_farm.workers.clock import clock_stopped
from mcp_farm.workers.errors import AdapterError, InfraError
from mcp_farm.workers.mcp.connections import Connected
from mcp_farm.workers.model.toolspec import ModelReply, ToolSpec
from mcp_farm.workers.session import SessionState, failure_text

NOT_MEASURED = "not measured"


class AgentClient:
    """Runs an agent command; in the farm's model protocol only so the trial can name it."""

    def __init__(self, target: ModelTarget) -> None:
        assert target.agent is not None
        self.target = target
        self.agent: AgentCommand = target.agent
        # The agent's model calls do not pass the farm: their tokens and model time are not
        # measured (the trial's `tokens` and `model_s` are None), and the provenance says so.
        self.pins = {**target.pins, "tokens": NOT_MEASURED}
        self.folder: Path | None = None
        self.config: Path | None = None
        self.output = Output()
        self.proc: Process | None = None
        self.lines: BufferedByteReceiveStream | None = None
        self.recorder: Recorder | None = None
        self.through: PassThrough | None = None
        """The model pass-through, when the target names `model_via`."""
        self._group: anyio.abc.TaskGroup | None = None

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec], prompt: PromptConfig, seed: int
    ) -> ModelReply:
        raise AdapterError(
            f"model {self.target.id!r} is an agent: it runs its own loop, and a scenario whose "
            "user is simulated cannot drive it yet (docs/agents.md)"
        )

    @asynccontextmanager
    async def session(
        self, state: SessionState, scenario: Scenario, conn: Connected
    ) -> AsyncIterator[None]:
        """Serve the trial's servers, write the config file, and (`jsonl`) start the agent,
        for the whole conversation; kill the agent and remove its folder however it ends."""
        self.folder = Path(tempfile.mkdtemp(prefix="farm-agent-"))
        self.recorder = Recorder(
            state, conn, loop_limit(state, scenario), elicitation=self.agent.elicitation
        )
        # Not measured until a model call of the agent's passes the farm (never zero).
        state.model_measured = False
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                try:
                    async with (
                        serving(self.recorder) as urls,
                        self._passing_through(state) as self.through,
                    ):
                        self.config = write_config(self.folder, urls, self.agent.servers_as)
                        try:
                            if self.agent.convention == "jsonl":
                                self.proc = await self._start(None)
                                assert self.proc.stdout is not None
                                self.lines = BufferedByteReceiveStream(self.proc.stdout)
                            yield
                        finally:
                            if self.proc is not None:
                                process.kill(self.proc)
                                # Its pipes closed too: a transport left open is collected
                                # after its event loop ended, an error in a later test.
                                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                                    await self.proc.aclose()
                finally:
                    group.cancel_scope.cancel()
        finally:
            state.agent_output = self.output.record()
            shutil.rmtree(self.folder, ignore_errors=True)

    @asynccontextmanager
    async def _passing_through(self, state: SessionState) -> AsyncIterator[PassThrough | None]:
        """The model pass-through (`model_via`) while the session runs; what went through it
        is the trial's tokens and model time, however the session ends."""
        if self.agent.model_via is None:
            yield None
            return
        async with passing_through(self.agent.model_via) as through:
            try:
                yield through
            finally:
                measure(state, through.calls)
                if through.calls:
                    self.pins.update(tokens="pass-through", model_calls=str(len(through.calls)))

    async def _start(self, prompt: str | None) -> Process:
        assert self.folder is not None and self.config is not None and self._group is not None
        through = self.through
        model = (through.url, through.token) if through else None
        model_url = through.url if through else None
        values = process.placeholder_values(self.config, self.folder, prompt, model_url)
        argv = [process.filled(arg, values) for arg in self.agent.command]
        cwd = Path(process.filled(self.agent.cwd, values)) if self.agent.cwd else self.folder
        env = process.agent_env(self.agent, self.config, os.environ, model)
        proc = await process.start(argv, cwd, env)
        self._group.start_soon(process.drain, proc.stderr, self.output.keep_err)
        return proc

    async def turn(
        self, state: SessionState, history: list[Message], said: str, limit_s: float | None
    ) -> None:
        """The agent's part of one user message: it answers, or its limit ends it."""
        assert self.recorder is not None
        first = len(state.calls)
        since = len(self.through.calls) if self.through else 0
        state.turns += 1
        await announce(self.recorder)  # a change before this message (a turn's trigger)
        with anyio.CancelScope() as turn_scope:
            self.recorder.on_loop = turn_scope.cancel
            with clock_stopped(state.clock), anyio.move_on_after(limit_s) as waited:
                if self.agent.convention == "jsonl":
                    await self._jsonl_turn(state, said)
                else:
                    await self._oneshot_turn(state, said)
        _record_calls(state, history, first, self.recorder.conn)
        if state.stop_reason == "tool_loop":
            if self.proc is not None:
                process.kill(self.proc)
            return
        self._blame_endpoint(since, waited.cancelled_caught or state.stop_reason == "format_error")
        if waited.cancelled_caught:
            state.stop_reason = "model_time_limit"
            state.limit_detail = self._detail(
                f"the agent gave no answer within {limit_s:g} s; its process group was killed"
            )
            if self.proc is not None:
                process.kill(self.proc)
            return
        if state.stop_reason == "answer":
            history.append(Message(role="assistant", content=state.final_answer or ""))

    async def _oneshot_turn(self, state: SessionState, said: str) -> None:
        on_stdin = not any("{prompt}" in arg for arg in self.agent.command)
        proc = await self._start(None if on_stdin else said)
        out = Output()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(process.drain, proc.stdout, out.keep_out)
                if proc.stdin is not None:
                    if on_stdin:
                        await proc.stdin.send(said.encode("utf-8"))
                    await proc.stdin.aclose()
                code = await proc.wait()
        finally:
            process.kill(proc)
            self.output.keep_tail(out.stdout)  # what it wrote, even cut off at its limit
        answer = process.escaped(out.stdout.decode("utf-8", "replace")).strip()
        if code != 0:
            state.stop_reason, state.format_error = (
                "format_error",
                self._detail(f"the agent exited with status {code} before answering"),
            )
            return
        state.final_answer, state.stop_reason = answer, "answer"

    async def _jsonl_turn(self, state: SessionState, said: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None and self.lines is not None
        try:
            await self.proc.stdin.send((json.dumps({"user": said}) + "\n").encode("utf-8"))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            state.stop_reason = "format_error"
            state.format_error = self._detail("the agent stopped reading its input")
            return
        while True:
            line = await process.read_line(self.lines)
            self.output.keep_tail(line or b"")
            if line is None:
                code = await self.proc.wait()
                state.stop_reason = "format_error"
                state.format_error = self._detail(
                    f"the agent exited with status {code} before answering"
                )
                return
            if not line.strip():
                continue
            answer = _assistant(line)
            if answer is None:
                state.stop_reason = "format_error"
                state.format_error = self._detail(
                    'the agent wrote a line that is not {"assistant": …}: '
                    + process.escaped(line[:300].decode("utf-8", "replace"))
                )
                return
            state.final_answer, state.stop_reason = answer, "answer"
            return

    def _blame_endpoint(self, since: int, failed: bool) -> None:
        """A turn the agent failed right after its model endpoint failed it (through the
        pass-through) is the endpoint's fault, an infra_error, as in the farm's own loop."""
        fault = endpoint_fault(self.through.calls[since:]) if failed and self.through else None
        if fault is None:
            return
        if self.proc is not None:
            process.kill(self.proc)
        raise InfraError(self._detail(fault))

    def _detail(self, what: str) -> str:
        err = self.output.err_text()[-2000:].strip()
        return f"{what}; its stderr ends: {err}" if err else what


def _assistant(line: bytes) -> str | None:
    try:
        said: Any = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if isinstance(said, dict) and isinstance(said.get("assistant"), str):
        return str(said["assistant"])
    return None


def _record_calls(state: SessionState, history: list[Message], first: int, conn: Connected) -> None:
    """The agent's calls of this turn in the history, as the farm's loop writes a model's."""
    for record in state.calls[first:]:
        call_id = f"agent_{record.index}"
        call = TranscriptCall(id=call_id, name=record.tool, arguments=dict(record.arguments))
        content = record.result_text if record.ok else failure_text(record, conn)
        history.append(Message(role="assistant", content="", tool_calls=[call]))
        history.append(
            Message(role="tool", content=content, tool_call_id=call_id, name=record.tool)
        )


def agent_session(
    client: object, state: SessionState, scenario: Scenario, conn: Connected
) -> AbstractAsyncContextManager[None]:
    """The agent's session for a trial of an agent target; nothing for a model's."""
    if isinstance(client, AgentClient):
        return client.session(state, scenario, conn)
    return nullcontext()


__all__ = ["KEEP_CHARS", "AgentClient", "agent_session"]
