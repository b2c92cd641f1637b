"""What goes to the model: the tools in each mode, the opening turns, the transcript as chat."""

from __future__ import annotations

import inspect
import json
from dataclasses import replace
from typing import Any

from mcp_farm.schema import (
    Message,
    PromptConfig,
)
from mcp_farm.workers.model.toolspec import ToolSpec


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


GENERIC_REPLY = (
    "Respond in JSON format, either with `tool_call` (a request to call tools) or with "
    "`response` reply to the user's request"
)
"""The reply format llama.cpp's server adds to the system text in its generic tool-call format
(common/chat.cpp), which the grammar then holds the reply to (`native_schema`)."""

GENERIC_TOOLS = "You can call any of the following tools to satisfy the user's requests: "
"""What llama.cpp's server (minja's tools polyfill) writes before the tools, as the OpenAI
`tools` array in JSON indented by two, for a chat template that does not render tools."""


def generic_system(tools: list[ToolSpec], *, with_tools: bool) -> str:
    """What llama.cpp's generic tool-call format adds to the system text: the reply format, then
    (`with_tools`, for a chat template that does not render them itself) the tools, each with
    its name, description and argument schema."""
    if not with_tools:
        return GENERIC_REPLY
    listed = json.dumps(openai_tools(tools), indent=2, ensure_ascii=False)
    return f"{GENERIC_REPLY}\n\n{GENERIC_TOOLS}{listed}"


def add_system(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """`text` after the system message's own, a blank line between (llama.cpp's `add_system`);
    a system message of its own first where there is none."""
    if messages and messages[0]["role"] == "system":
        first = {**messages[0], "content": f"{messages[0]['content']}\n\n{text}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def with_annotations(tool: ToolSpec) -> ToolSpec:
    """The tool with the hints its server declared true written after its description
    (`show_annotations`): the one text every tool-calling mode shows the model alike."""
    hints = [
        f"{name}: true"
        for name, on in (("readOnlyHint", tool.read_only), ("destructiveHint", tool.destructive))
        if on
    ]
    if not hints:
        return tool
    text = f"{tool.description.rstrip()}\nAnnotations: {', '.join(hints)}".lstrip()
    return replace(tool, description=text)


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


def servers_as_text(instructions: dict[str, str]) -> str:
    """What the servers say about themselves, one block per server, as MCP clients add a
    server's initialize instructions to the system prompt."""
    lines = ["About the servers:"]
    for server, text in instructions.items():
        body = [line for line in inspect.cleandoc(text).splitlines() if line.strip()]
        lines.append(f"- {server}: {body[0]}")
        lines += [f"  {line}" for line in body[1:]]
    return "\n".join(lines)


def opening_messages(
    prompt: PromptConfig,
    user_prompt: str,
    tools: list[ToolSpec],
    instructions: dict[str, str] | None = None,
) -> list[Message]:
    """System prompt (with what the servers say about themselves, in every mode, and the
    tool list in text modes), few-shot turns, then the request."""
    system = prompt.system_prompt.strip()
    if instructions:
        system = f"{system}\n\n{servers_as_text(instructions)}"
    if prompt.mode != "native":
        system = f"{system}\n\n{tools_as_text(tools)}"
    messages = [Message(role="system", content=system)]
    for shot in prompt.few_shot:
        messages.append(Message(role="user", content=shot.user))
        messages.append(Message(role="assistant", content=shot.assistant))
    messages.append(Message(role="user", content=user_prompt))
    return messages


def user_turn(messages: list[Message], prompt: PromptConfig) -> int:
    """Which user turn (0-based) `messages` end in: the user messages after the prompt
    config's few-shot examples (`opening_messages`), less one. Tool results are not user
    messages here, whatever a text mode later shows them as."""
    users = sum(1 for m in messages if m.role == "user")
    return users - len(prompt.few_shot) - 1


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
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": json.dumps(c.arguments),
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
