"""What comes back from the model: JSON-in-text replies and native tool calls, checked for use."""

from __future__ import annotations

import re
from typing import Any

from mcp_farm.workers.model.safejson import (
    UnreadableJson,
    as_json_text,
    loads,
    raw_decode,
    shorten,
    wire_problem,
)
from mcp_farm.workers.model.toolspec import (
    ModelReply,
    ParsedCall,
)

FENCE_LANGUAGE = re.compile(r"[a-zA-Z]*")


def unfenced(text: str) -> str:
    """The text without a surrounding Markdown code fence (```json … ```), stripped.

    Done with string operations: a regular expression for the closing fence backtracks over
    every run of whitespace, which is quadratic on a reply padded with spaces.
    """
    body = text.strip()
    if body.startswith("```"):
        body = body[3:]
        language = FENCE_LANGUAGE.match(body)
        body = body[language.end() if language else 0 :].lstrip()
    if body.endswith("```"):
        body = body[:-3].rstrip()
    return body


def decode_text_reply(text: str, turn: int) -> ModelReply:
    """Decode `{"tool": …, "arguments": …}` or `{"answer": …}` from a model's text.

    Text with no `{` at all is taken as a plain-language answer. Anything that opens a JSON
    object but does not decode into one of the two shapes is a format error. Never raises.
    """
    body = unfenced(text)
    start = body.find("{")
    if start < 0:
        return ModelReply(text=body)
    try:
        obj, _end = raw_decode(body[start:])
    except UnreadableJson as exc:
        return ModelReply(text=text, format_error=str(exc))
    if not isinstance(obj, dict):
        return ModelReply(text=text, format_error="the reply is JSON but not an object")
    if "answer" in obj and "tool" not in obj:
        answer = obj["answer"]
        return ModelReply(text=answer if isinstance(answer, str) else as_json_text(answer))
    name = obj.get("tool") or obj.get("name")
    args = obj.get("arguments", obj.get("parameters", {}))
    if not isinstance(name, str) or not name:
        return ModelReply(text=text, format_error="a JSON object with neither `tool` nor `answer`")
    if not isinstance(args, dict):
        return ModelReply(
            text=text, format_error=f"`arguments` of {shorten(name)} is not an object"
        )
    call = checked_call(f"call_{turn}_0", name, args)
    if isinstance(call, str):
        return ModelReply(text=text, format_error=call)
    return ModelReply(text=text, calls=[call])


def decode_arguments(raw: Any, name: str) -> dict[str, Any] | str:
    """Arguments of a native tool call (a JSON string or an object) as plain JSON (see
    `wire_problem`); a str means an error."""
    shown = shorten(name)
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = loads(raw)
        except UnreadableJson as exc:
            return f"arguments of {shown} are not valid JSON ({exc}): {shorten(raw)}"
        if not isinstance(raw, dict):
            return f"arguments of {shown} are not a JSON object"
    if not isinstance(raw, dict):
        return f"arguments of {shown} are a {type(raw).__name__}, not a JSON object"
    problem = wire_problem(raw)
    return f"arguments of {shown}: {problem}" if problem else raw


def checked_call(call_id: str, name: Any, arguments: dict[str, Any] | str) -> ParsedCall | str:
    """A call the session can execute, or why the model's call is unusable (a format error).

    `arguments` is what `decode_arguments` gave (a str is its error). The name must be text and
    the arguments plain JSON (string keys, valid Unicode, finite numbers), so nothing that runs,
    grades or stores the call later has to cope with anything else.
    """
    if name is None or name == "":
        return "a tool call without a name"
    if not isinstance(name, str):
        return f"the tool name is a {type(name).__name__}, not a string: {shorten(name)}"
    if isinstance(arguments, str):
        return arguments
    problem = wire_problem(arguments)
    if problem:
        return f"arguments of {shorten(name)}: {problem}"
    return ParsedCall(call_id=call_id, name=name, arguments=arguments)


def native_call(raw: Any, default_id: str) -> ParsedCall | str:
    """One entry of an OpenAI `tool_calls` array, or why it is unusable (a format error)."""
    if not isinstance(raw, dict):
        return f"a tool call is a {type(raw).__name__}, not an object"
    fn = raw.get("function")
    if not isinstance(fn, dict):
        return "a tool call without a `function` object"
    name = fn.get("name")
    call_id = raw.get("id")
    # The id only pairs a result with its call; one of the wrong type is replaced, not fatal.
    usable_id = call_id if isinstance(call_id, str) and call_id else default_id
    shown = name if isinstance(name, str) else ""
    return checked_call(usable_id, name, decode_arguments(fn.get("arguments"), shown))


def content_text(content: Any) -> str | None:
    """The text of a chat message's `content`: a string, null (no text), or a list of text
    parts; None when it is anything else."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(part, dict) and isinstance(part.get("text"), str) for part in content
    ):
        return "".join(part["text"] for part in content)
    return None
