"""Presenting tools to a model in each mode, and decoding JSON-in-text replies."""

from __future__ import annotations

import json
import re
from typing import Any

from schema import Message, PromptConfig
from workers.toolspec import ModelReply, ParsedCall, ToolSpec

FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


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
    """A plain listing of tools with their JSON argument schemas, for JSON-in-text modes."""
    lines = ["Tools:"]
    for t in tools:
        props = (t.input_schema or {}).get("properties", {})
        required = set((t.input_schema or {}).get("required", []))
        args = ", ".join(
            f"{name}: {spec.get('type', 'any')}{'' if name in required else ' (optional)'}"
            for name, spec in props.items()
        )
        lines.append(f"- {t.shown_name}({args}): {t.description.strip().splitlines()[0]}")
    return "\n".join(lines)


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
    object but does not decode into one of the two shapes is a format error.
    """
    body = FENCE.sub("", text.strip())
    start = body.find("{")
    if start < 0:
        return ModelReply(text=body)
    try:
        obj, _end = json.JSONDecoder().raw_decode(body[start:])
    except json.JSONDecodeError as exc:
        return ModelReply(text=text, format_error=f"unparseable JSON: {exc.msg} at {exc.pos}")
    if not isinstance(obj, dict):
        return ModelReply(text=text, format_error="the reply is JSON but not an object")
    if "answer" in obj and "tool" not in obj:
        return ModelReply(text=str(obj["answer"]))
    name = obj.get("tool") or obj.get("name")
    args = obj.get("arguments", obj.get("parameters", {}))
    if not isinstance(name, str) or not name:
        return ModelReply(text=text, format_error="a JSON object with neither `tool` nor `answer`")
    if not isinstance(args, dict):
        return ModelReply(text=text, format_error=f"`arguments` of {name} is not an object")
    return ModelReply(
        text=text, calls=[ParsedCall(call_id=f"call_{turn}_0", name=name, arguments=args)]
    )


def decode_arguments(raw: Any, name: str) -> dict[str, Any] | str:
    """Arguments of a native tool call (a JSON string or an object); a str means an error."""
    if isinstance(raw, dict):
        return raw
    if raw in (None, ""):
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        return f"arguments of {name} are not valid JSON: {str(raw)[:200]!r}"
    if not isinstance(value, dict):
        return f"arguments of {name} are not a JSON object"
    return value


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
