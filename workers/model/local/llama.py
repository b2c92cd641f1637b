"""llama.cpp's model class as the farm uses it: prompt reuse in whole batches, a lazy grammar, a reply that must fit, loaded once per file."""

from __future__ import annotations

import atexit
import ctypes
import json
from functools import lru_cache
from typing import Any

from mcp_farm.workers.errors import AdapterError, WorkerError
from mcp_farm.workers.model.constrain import (
    Grammars,
    LazyGrammarSampler,
    ReplyGrammar,
    Truncation,
)
from mcp_farm.workers.model.encode import openai_tools
from mcp_farm.workers.model.guard import ReplyGuard
from mcp_farm.workers.model.toolspec import ToolSpec


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
def _load(path: str, chat_format: str | None, n_ctx: int, threads: int = 2) -> Any:
    return _llama()(
        model_path=path,
        chat_format=chat_format,  # None: the GGUF file's own template
        n_ctx=n_ctx,
        n_batch=N_BATCH,
        n_threads=threads,
        verbose=False,
        seed=0,
    )


# Free the models while the interpreter is still whole; llama-cpp-python's own finaliser
# fails noisily when it runs during interpreter teardown.
atexit.register(_load.cache_clear)
