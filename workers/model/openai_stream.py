"""Reading a streamed chat completion (server-sent events) into the message it adds up to.

The assembled message is decoded by the same code as an unstreamed reply, so a stream can
only differ in what the endpoint did with it. The split of blame is the unstreamed one: a
stream that is not a chat-completion stream (a line that is no JSON, an error event, no
choices, an end before the reply finished) is the endpoint's failure, InfraError; what the
deltas carry (content of the wrong type, a broken call) is the model's, and reaches the
decoder as it came, to become a format error there.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.model.decode import content_text
from mcp_farm.workers.model.safejson import (
    UnreadableJson,
    loads,
)

MAX_CHUNK_DEPTH = 128
"""Nesting allowed in one event's JSON (the same allowance as an unstreamed body)."""

DONE = "[DONE]"


@dataclass
class _Call:
    """One tool call as its deltas arrive (OpenAI sends the id and name first, then the
    arguments in pieces)."""

    id: Any = None
    name: Any = None
    arguments: list[Any] = field(default_factory=list)
    raw: Any = None
    """The delta entry itself, when it had no usable shape: passed on for the decoder to
    classify, as it would an unstreamed call of that shape."""

    def add(self, entry: dict[str, Any]) -> None:
        if isinstance(entry.get("id"), str) and self.id is None:
            self.id = entry["id"]
        fn = entry.get("function")
        if fn is None:
            return
        if not isinstance(fn, dict):
            self.raw = entry
            return
        name = fn.get("name")
        if isinstance(name, str) and isinstance(self.name, str):
            # Some servers repeat the whole name with every delta, others split it.
            self.name = self.name if name in ("", self.name) else self.name + name
        elif name is not None:
            self.name = name
        if fn.get("arguments") is not None:
            self.arguments.append(fn["arguments"])

    def message_entry(self) -> Any:
        if self.raw is not None:
            return self.raw
        pieces = self.arguments
        if all(isinstance(p, str) for p in pieces):
            arguments: Any = "".join(pieces)
        else:  # an object sent whole is fine; pieces of mixed kinds are not an object
            arguments = pieces[0] if len(pieces) == 1 else pieces
        function = {"name": self.name, "arguments": arguments}
        return {"id": self.id, "type": "function", "function": function}


@dataclass
class Streamed:
    """What a stream added up to."""

    message: dict[str, Any]
    """The assistant message, shaped like an unstreamed completion's."""
    usage: dict[str, Any]
    first_token_s: float | None
    """Seconds from the request to the first delta that carried anything."""


@dataclass
class _Assembly:
    url: str
    started: float
    clock: Callable[[], float]
    text: list[str] = field(default_factory=list)
    odd_content: list[Any] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    odd_calls: Any = None
    usage: dict[str, Any] = field(default_factory=dict)
    first_token_s: float | None = None
    had_choice: bool = False
    finished: bool = False

    def event(self, data: str) -> None:
        try:
            chunk = loads(data, MAX_CHUNK_DEPTH, lenient=True)
        except UnreadableJson as exc:
            raise InfraError(
                f"endpoint {self.url} streamed an event that is no JSON ({exc}): {data[:200]!r}"
            ) from None
        if not isinstance(chunk, dict) or "error" in chunk:
            raise InfraError(f"endpoint {self.url} streamed no completion chunk: {data[:300]!r}")
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        choices = chunk.get("choices")
        if choices is None or choices == []:
            return  # the usage chunk at the end carries no choice
        if not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise InfraError(
                f"endpoint {self.url} streamed a chunk without a choice: {data[:300]!r}"
            )
        choice = choices[0]
        self.had_choice = True
        self.finished = self.finished or bool(choice.get("finish_reason"))
        delta = choice.get("delta")
        if delta is None:
            return
        if not isinstance(delta, dict):
            raise InfraError(
                f"endpoint {self.url} streamed a delta that is no object: {data[:300]!r}"
            )
        self._delta(delta)

    def _delta(self, delta: dict[str, Any]) -> None:
        content, reasoning = delta.get("content"), delta.get("reasoning_content")
        calls = delta.get("tool_calls")
        carries = (
            content not in (None, "") or calls not in (None, []) or reasoning not in (None, "")
        )
        if carries and self.first_token_s is None:
            self.first_token_s = self.clock() - self.started
        if content is not None:
            text = content_text(content)
            if text is None or self.odd_content:
                self.odd_content.append(content)
            else:
                self.text.append(text)
        if calls is None:
            return
        if not isinstance(calls, list):
            self.odd_calls = calls
            return
        for position, entry in enumerate(calls):
            index = entry.get("index", position) if isinstance(entry, dict) else None
            if not isinstance(index, int) or isinstance(index, bool):
                # No usable index: kept as a call of its own, for the decoder to judge.
                self.calls[-1 - len(self.calls)] = _Call(raw=entry)
                continue
            self.calls.setdefault(index, _Call()).add(entry)

    def message(self) -> dict[str, Any]:
        content: Any = "".join(self.text) or None
        if self.odd_content:
            # As it came, so the decoder reports it like unstreamed content of that shape.
            content = [*self.text, *self.odd_content]
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if self.odd_calls is not None:
            message["tool_calls"] = self.odd_calls
        elif self.calls:
            order = sorted(self.calls, key=lambda i: (i < 0, abs(i)))
            message["tool_calls"] = [self.calls[i].message_entry() for i in order]
        return message


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The data of each server-sent event (several `data:` lines of one event joined)."""
    data: list[str] = []
    async for line in lines:
        if line == "":
            if data:
                yield "\n".join(data)
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        # Comments (`:`), `event:`, `id:` and `retry:` lines carry nothing a completion needs.
    if data:
        yield "\n".join(data)


async def assemble(
    lines: AsyncIterator[str],
    url: str,
    started: float,
    clock: Callable[[], float] = time.perf_counter,
) -> Streamed:
    """Read a completion stream to its end; `started` is `clock()` when the request was sent."""
    assembly = _Assembly(url, started, clock)
    done = False
    async for data in sse_data(lines):
        if data.strip() == DONE:
            done = True
            break
        assembly.event(data)
    if not assembly.had_choice:
        raise InfraError(f"endpoint {url} streamed no choices")
    if not (done or assembly.finished):
        raise InfraError(f"the stream from {url} ended before the reply was complete")
    return Streamed(assembly.message(), assembly.usage, assembly.first_token_s)
