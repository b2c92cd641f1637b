"""Splitting a transcript into what the answer says (prose) and how it got there (audit).

Answer scoring reads the prose only: a keyword or a citation that appears in a tool call's
arguments or in a tool's result was never said to the developer, so it earns nothing. Nor does
one inside a call the decoder could not read (cut off at the token limit, say): text taken for
an attempted call is audit, whatever became of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from mcp_farm.schema import Message, TranscriptCall


@dataclass(frozen=True)
class Partitioned:
    """A transcript split in two streams; neither holds the system prompt, the few-shot
    examples or the user's request."""

    prose: str
    """The assistant's own words: messages that call no tool, joined with blank lines."""
    audit: str
    """Tool calls (the calling message's text and each call's arguments as JSON) and tool
    results, in order, joined with blank lines."""


def partition(transcript: list[Message], format_error: bool = False) -> Partitioned:
    """Split `transcript` into prose and audit.

    A message marked `undecoded` is audit. `format_error` says the trial ended on one: its
    last assistant message is then audit too, so transcripts stored before messages were
    marked are split the same way.

    Only messages after the last `user` message count: the opening of a transcript is the
    system prompt, then few-shot user/assistant pairs, then the real request, and the session
    never adds a user message after that (tool results are stored with role `tool`, even in
    the text modes that show them to the model as user turns). So a few-shot assistant reply
    is never mistaken for the model's answer.
    """
    prose: list[str] = []
    audit: list[str] = []
    start = _agent_start(transcript)
    broken = _last_assistant(transcript, start) if format_error else None
    for index, message in enumerate(transcript[start:], start):
        if message.role == "assistant" and (message.undecoded or index == broken):
            audit.append(message.content)
        elif message.role == "assistant" and not message.tool_calls:
            prose.append(message.content)
        elif message.role == "assistant":
            audit.append(message.content)
            audit.extend(_call_text(call) for call in message.tool_calls or [])
        elif message.role == "tool":
            audit.append(message.content)
    return Partitioned(prose=_join(prose), audit=_join(audit))


def _agent_start(transcript: list[Message]) -> int:
    """Index of the first message after the last user message (0 when there is none)."""
    users = [i for i, m in enumerate(transcript) if m.role == "user"]
    return users[-1] + 1 if users else 0


def _last_assistant(transcript: list[Message], start: int) -> int | None:
    found = [i for i in range(start, len(transcript)) if transcript[i].role == "assistant"]
    return found[-1] if found else None


def _call_text(call: TranscriptCall) -> str:
    arguments = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
    return f"{call.name} {arguments}"


def _join(parts: list[str]) -> str:
    return "\n\n".join(p.strip() for p in parts if p.strip())
