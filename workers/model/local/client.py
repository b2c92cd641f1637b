"""The local model adapter: a chat through llama.cpp with tool calls constrained by a JSON schema and decoded here."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Literal

import anyio

from mcp_farm.schema import (
    Message,
    ModelTarget,
    PromptConfig,
    TokenCounts,
)
from mcp_farm.workers.errors import AdapterError
from mcp_farm.workers.model.decode import (
    checked_call,
    decode_arguments,
    decode_text_reply,
)
from mcp_farm.workers.model.encode import (
    add_system,
    chat_messages,
    generic_system,
    openai_tools,
    reply_schema,
)
from mcp_farm.workers.model.guard import (
    MIN_STALL_S,
    ReplyGuard,
    guarded,
)
from mcp_farm.workers.model.local.bundled import BUNDLED, bundled_path
from mcp_farm.workers.model.local.llama import (
    N_BATCH,
    PromptTooLong,
    _load,
    chat_template,
    renders_tools,
    schema_grammar,
)
from mcp_farm.workers.model.safejson import (
    UnreadableJson,
    as_json_text,
    loads,
)
from mcp_farm.workers.model.toolspec import (
    JsonReply,
    ModelReply,
    Sampling,
    ToolSpec,
)

_LOCK = threading.Lock()

ToolRendering = Literal["generic", "template"]
"""How a `native` prompt shows the tools: `generic`, written into the system text as llama.cpp's
server does for a chat template without tool support; `template`, by the model's own chat
template (read from its GGUF file), which renders the `tools` it is given."""


def native_schema(tools: list[ToolSpec]) -> dict[str, Any]:
    """One tool call (name and typed arguments) or a plain response."""
    calls = [
        {
            "type": "object",
            "properties": {
                "tool_call": {
                    "type": "object",
                    "properties": {
                        "name": {"const": t.shown_name},
                        "arguments": t.input_schema or {"type": "object"},
                    },
                    "required": ["name", "arguments"],
                }
            },
            "required": ["tool_call"],
        }
        for t in tools
    ]
    response = {
        "type": "object",
        "properties": {"response": {"type": "string"}},
        "required": ["response"],
    }
    return {"anyOf": [*calls, response]}


class LocalClient:
    reuse_prefix: bool = True
    """Keep the evaluated prompt between completions: llama.cpp then evaluates only what
    follows the whole batches the new prompt shares with the last one (turn 2 of a session,
    or the next trial with the same system prompt and tools; see `_aligned_llama`). False
    re-reads every prompt from its first token (bench/prefix_reuse.py measures both)."""
    lazy_grammar: bool = True
    """Check a constrained reply's grammar against the model's best tokens before the whole
    vocabulary (the same tokens, see `constrain`); False is llama-cpp-python's own path
    (bench/constrained_decoding.py measures both)."""

    def __init__(
        self, target: ModelTarget, cache_dir: Path, n_ctx: int = 4096, threads: int = 2
    ) -> None:
        if target.model in BUNDLED:
            spec = BUNDLED[target.model]
            self.path = bundled_path(target.model, cache_dir)
            self.chat_format = target.pins.get("chat_format", spec.chat_format)
            quant = spec.quantisation
        elif target.model.endswith(".gguf") and Path(target.model).exists():
            self.path = Path(target.model)
            self.chat_format = target.pins.get("chat_format", "chatml")
            quant = target.pins.get("quantisation", "unknown")
        else:
            known = ", ".join(sorted(BUNDLED))
            raise AdapterError(
                f"model {target.id!r}: unknown local model {target.model!r}; "
                f"use one of {known} or a path to a .gguf file"
            )
        self.tool_rendering: ToolRendering = "generic"
        if "chat_format" not in target.pins:
            template = chat_template(str(self.path))
            if template is not None and renders_tools(template):
                self.tool_rendering, self.chat_format = "template", None
        self.n_ctx = n_ctx
        self.threads = threads
        """llama.cpp's decoding threads (`Settings.local_threads`): speed only, same replies."""
        self.reply_limit_s = target.reply_limit_s
        """CPU seconds one reply may use (see `guard`): this model runs in this process."""
        from importlib.metadata import version

        self.pins = {
            "adapter": "local",
            "model_file": self.path.name,
            "chat_format": self.chat_format or "gguf",
            "quantisation": quant,
            "llama_cpp_python": version("llama_cpp_python"),
            "tool_calls": "json-schema-constrained",
            "tool_rendering": self.tool_rendering,
            "n_batch": str(N_BATCH),  # batched evaluation moves the last bits of a logit
        }

    chat_format: str | None
    """llama-cpp-python's chat format; None: the GGUF file's own template (`template`)."""

    def _messages(
        self, messages: list[Message], mode: str, tools: list[ToolSpec]
    ) -> list[dict[str, Any]]:
        # llama.cpp has no tool role for these templates: calls and results travel as text.
        plain = []
        for m in messages:
            if m.role == "assistant" and m.tool_calls and mode == "native":
                call = m.tool_calls[0]
                text = json.dumps({"tool_call": {"name": call.name, "arguments": call.arguments}})
                plain.append(Message(role="assistant", content=text))
            else:
                plain.append(m)
        chat = chat_messages(plain, "json")
        if mode == "native" and tools:
            shown = generic_system(tools, with_tools=self.tool_rendering == "generic")
            chat = add_system(chat, shown)
        return self._fold_system(chat)

    def _fold_system(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Gemma has no system role; its own template puts the system text in the first turn."""
        if self.chat_format != "gemma" or len(messages) < 2 or messages[0]["role"] != "system":
            return messages
        system, first, *rest = messages
        return [{"role": "user", "content": f"{system['content']}\n\n{first['content']}"}, *rest]

    def _generate(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        prompt: PromptConfig,
        seed: int,
        guard: ReplyGuard,
    ) -> dict[str, Any]:
        llm = _load(str(self.path), self.chat_format, self.n_ctx, self.threads)
        gen = prompt.generation
        kwargs: dict[str, Any] = {
            "messages": self._messages(messages, prompt.mode, tools),
            "temperature": gen.temperature,
            "top_p": gen.top_p,
            "max_tokens": gen.max_tokens,
            "seed": gen.seed if gen.seed is not None else seed,
        }
        if prompt.mode == "native" and tools:
            kwargs["grammar"] = schema_grammar(native_schema(tools))
            if self.tool_rendering == "template":
                kwargs["tools"] = openai_tools(tools)
        elif prompt.mode == "grammar":
            kwargs["grammar"] = schema_grammar(reply_schema(tools))
        with _LOCK:
            self._fresh(llm)
            llm.lazy_grammar = self.lazy_grammar
            llm.guard, llm.must_fit = guard, True
            guard.begin()
            try:
                result: dict[str, Any] = llm.create_chat_completion(**kwargs)
            finally:
                llm.guard, llm.must_fit = None, False
        return result

    def _fresh(self, llm: Any) -> None:
        """Forget the evaluated prompt unless reusing it."""
        if not self.reuse_prefix:
            llm.reset()

    def _generate_json(
        self, messages: list[dict[str, str]], schema: dict[str, Any], sampling: Sampling
    ) -> dict[str, Any]:
        llm = _load(str(self.path), self.chat_format, self.n_ctx, self.threads)
        with _LOCK:
            self._fresh(llm)
            llm.lazy_grammar = self.lazy_grammar
            result: dict[str, Any] = llm.create_chat_completion(
                messages=self._fold_system(messages),
                temperature=sampling.temperature,
                max_tokens=sampling.max_tokens,
                seed=sampling.seed,
                grammar=schema_grammar(schema),
            )
        return result

    async def complete_json(
        self, messages: list[dict[str, str]], schema: dict[str, Any], sampling: Sampling
    ) -> JsonReply:
        """One reply constrained by a JSON schema (llama.cpp grammar): how the local judge
        answers."""
        data = await anyio.to_thread.run_sync(
            self._generate_json, messages, schema, sampling, abandon_on_cancel=True
        )
        usage = data.get("usage") or {}
        return JsonReply(
            text=data["choices"][0]["message"].get("content") or "",
            tokens=TokenCounts(
                prompt=int(usage.get("prompt_tokens", 0)),
                completion=int(usage.get("completion_tokens", 0)),
            ),
        )

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec], prompt: PromptConfig, seed: int
    ) -> ModelReply:
        turn = sum(1 for m in messages if m.role == "assistant")
        guard = ReplyGuard(self.reply_limit_s, max(self.reply_limit_s, MIN_STALL_S))
        try:
            data = await guarded(lambda g: self._generate(messages, tools, prompt, seed, g), guard)
        except PromptTooLong as exc:
            return ModelReply(stop="context_overflow", text=f"{exc} (turn {turn + 1})")
        if data is None:
            return ModelReply(stop="model_time_limit", text=f"{guard.reason} (turn {turn + 1})")
        usage = data.get("usage") or {}
        text = data["choices"][0]["message"].get("content") or ""
        reply = (
            self._decode_native(text, turn)
            if prompt.mode == "native" and tools
            else (
                decode_text_reply(text, turn) if prompt.mode != "native" else ModelReply(text=text)
            )
        )
        reply.tokens = TokenCounts(
            prompt=int(usage.get("prompt_tokens", 0)),
            completion=int(usage.get("completion_tokens", 0)),
        )
        return reply

    @staticmethod
    def _decode_native(text: str, turn: int) -> ModelReply:
        """A grammar-constrained reply: `{"tool_call": {name, arguments}}` or `{"response": …}`.

        The grammar makes other shapes unlikely, not impossible (it can run out of tokens
        mid-object), so every other text is a format error; never raises.
        """
        try:
            obj = loads(text)
        except UnreadableJson as exc:
            return ModelReply(text=text, format_error=str(exc))
        if isinstance(obj, dict) and isinstance(obj.get("tool_call"), dict):
            call = obj["tool_call"]
            name = call.get("name")
            shown = name if isinstance(name, str) else ""
            parsed = checked_call(
                f"call_{turn}_0", name, decode_arguments(call.get("arguments"), shown)
            )
            if isinstance(parsed, str):
                return ModelReply(text=text, format_error=parsed)
            return ModelReply(text="", calls=[parsed])
        if isinstance(obj, dict) and "response" in obj:
            response = obj["response"]
            return ModelReply(
                text=response if isinstance(response, str) else as_json_text(response)
            )
        return ModelReply(text=text, format_error="neither a tool call nor a response")
