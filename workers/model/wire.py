"""Presenting tools to a model in each mode, and decoding JSON-in-text replies."""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

from mcp_farm.schema import (
    Message,
    PromptConfig,
)
from mcp_farm.workers.model.safejson import (
    UnreadableJson,
    describe,
    loads,
    raw_decode,
    shorten,
    wire_problem,
)
from mcp_farm.workers.model.toolspec import (
    ModelReply,
    ParsedCall,
    ToolSpec,
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


def openai_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """The OpenAI `tools` array."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.shown_name,
                "description": t.description,
                "parameters": t.input_schema or {"type": "object", "properties": {}},
            },
        }
        for t in tools
    ]


def tools_as_text(tools: list[ToolSpec]) -> str:
    """The tools for JSON-in-text modes: each with its full description and its argument
    schema as one line of compact JSON (types, item shapes, allowed values, which are
    required), so a text mode sees what a native mode's `tools` array carries."""
    lines = ["Tools:"]
    for t in tools:
        # cleandoc: descriptions are often docstrings, indented after their first line.
        text = [line for line in inspect.cleandoc(t.description).splitlines() if line.strip()]
        lines.append(f"- {t.shown_name}: {text[0] if text else '(no description)'}")
        lines += [f"  {line}" for line in text[1:]]
        lines.append(f"  arguments: {_compact(t.input_schema)}")
    return "\n".join(lines)


def _compact(schema: dict[str, Any]) -> str:
    """A tool's input schema as one line, without the titles SDKs derive from names (the
    `fooArguments` of the object and `Foo` of a property `foo`), which add nothing."""
    if not schema.get("properties"):
        return "none"
    lean = {k: v for k, v in schema.items() if k != "title"}
    lean["properties"] = {
        name: _untitled(name, spec) for name, spec in schema["properties"].items()
    }
    return json.dumps(lean, ensure_ascii=False, separators=(", ", ": "))


def _untitled(name: str, spec: Any) -> Any:
    if isinstance(spec, dict) and spec.get("title") == name.replace("_", " ").title():
        return {k: v for k, v in spec.items() if k != "title"}
    return spec


def opening_messages(
    prompt: PromptConfig, user_prompt: str, tools: list[ToolSpec]
) -> list[Message]:
    """System prompt (with the tool list in text modes), few-shot turns, then the request."""
    system = prompt.system_prompt.strip()
    if prompt.mode != "native":
        system = f"{system}\n\n{tools_as_text(tools)}"
    messages = [Message(role="system", content=system)]
    for shot in prompt.few_shot:
        messages.append(Message(role="user", content=shot.user))
        messages.append(Message(role="assistant", content=shot.assistant))
    messages.append(Message(role="user", content=user_prompt))
    return messages


def reply_schema(tools: list[ToolSpec]) -> dict[str, Any]:
    """JSON schema of a JSON-in-text reply: one tool call with typed arguments, or an answer."""
    calls = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": t.shown_name},
                "arguments": t.input_schema or {"type": "object"},
            },
            "required": ["tool", "arguments"],
        }
        for t in tools
    ]
    answer = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    return {"anyOf": [*calls, answer]}


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
        return ModelReply(text=answer if isinstance(answer, str) else describe(answer))
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


def chat_messages(messages: list[Message], mode: str) -> list[dict[str, Any]]:
    """Transcript → chat-completions messages.

    In native mode tool calls and results use the API's own fields. In the text modes the model
    never saw a tools API, so its calls stay as the text it wrote and results come back as a
    user turn.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if mode == "native" and m.role == "assistant" and m.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": m.content or None,
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {
                                "name": c["name"],
                                "arguments": json.dumps(c["arguments"]),
                            },
                        }
                        for c in m.tool_calls
                    ],
                }
            )
        elif mode == "native" and m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.role == "tool":
            out.append({"role": "user", "content": f"Result of {m.name}:\n{m.content}"})
        else:
            out.append({"role": m.role, "content": m.content})
    return out
