"""A grammar sampler for llama.cpp that checks the grammar against the model's best tokens
first and against the whole vocabulary only when those cannot decide (see `candidates`).

llama-cpp-python applies a reply's grammar to every token of the vocabulary at every step
(262,144 tokens for the bundled Gemma), and builds and parses the grammar again for every
reply (cheap: well under a millisecond; masking the vocabulary is what costs). Here a
parsed grammar is kept per grammar text and cloned for each reply (a clone copies the parsed
rules and starts from the grammar's first state), and each step hands the grammar a shortlist
of the highest logits. The chosen token is accepted by the reply's grammar, so its state
follows the reply; the samplers after the grammar are llama-cpp-python's own chain, fed the
same candidates the whole-vocabulary path would leave them, so the same token comes out (the
same random draw too, above temperature 0).
"""

from __future__ import annotations

import ctypes
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from mcp_farm.workers.errors import WorkerError
from mcp_farm.workers.model.constrain.candidates import (
    Logits,
    Truncation,
    decides,
    highest,
    shortlist,
    token_array,
)

SPREAD = 10.0
"""Tokens within this many logits of the best are checked against the grammar first. Min-p
(0.05 by default) drops everything 3 below the best allowed token, so a spread of 10 decides
at temperature above 0 whenever the best allowed token is within 7 of the model's favourite."""

SHORTLIST = 1024
"""The most tokens checked first (the highest, when a flat distribution puts more within the
spread): applying a grammar costs about 0.1–0.4 µs a token, the whole vocabulary 30–110 ms
on this 2-core machine, depending on the grammar's state."""

WIDEN = 8
"""When the shortlist cannot decide, the next check takes this many times as many of the
highest tokens, up to the whole vocabulary. Where the model's favourites are forbidden (a key,
a bracket) the best allowed token was measured anywhere from the 40th to the 87,000th."""

GRAMMARS_KEPT = 64
"""Parsed grammars kept (one per tool set and reply schema); the least recently used goes."""


class GrammarDeadEnd(WorkerError):
    """No token was chosen: the grammar forbade them all (llama.cpp's own path aborts)."""


def _llama() -> Any:
    import llama_cpp

    return llama_cpp


def _apply(sampler: Any, data: npt.NDArray[np.void]) -> int:
    """Run a llama.cpp sampler over candidates (in place); the id of the token it selected, or
    -1 when it selects none (a grammar only masks)."""
    llama_cpp = _llama()
    view = llama_cpp.llama_token_data_array(
        data=data.ctypes.data_as(llama_cpp.llama_token_data_p),
        size=len(data),
        selected=-1,
        sorted=False,
    )
    llama_cpp.llama_sampler_apply(sampler, ctypes.byref(view))
    if view.selected < 0:
        return -1
    # Read through the array's own pointer: llama.cpp's samplers may move it.
    return int(view.data[view.selected].id)


class Grammars:
    """Parsed grammars of one model's vocabulary, by grammar text."""

    def __init__(self, vocab: Any, kept: int = GRAMMARS_KEPT) -> None:
        self.vocab = vocab
        self.kept = kept
        self.parsed: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self.parses = 0
        """Grammars parsed so far (a test reads it: one parse per grammar text)."""
        weakref.finalize(self, _free_all, self.parsed)

    def fresh(self, text: str, root: str) -> Any:
        """A grammar sampler at the grammar's first state; the caller frees it."""
        llama_cpp = _llama()
        key = (text, root)
        if key not in self.parsed:
            sampler = llama_cpp.llama_sampler_init_grammar(
                self.vocab, text.encode("utf-8"), root.encode("utf-8")
            )
            if not sampler:
                raise ValueError("llama.cpp could not parse the grammar")
            self.parses += 1
            self.parsed[key] = sampler
            while len(self.parsed) > self.kept:
                llama_cpp.llama_sampler_free(self.parsed.popitem(last=False)[1])
        self.parsed.move_to_end(key)
        return llama_cpp.llama_sampler_clone(self.parsed[key])

    def close(self) -> None:
        _free_all(self.parsed)


def _free_all(parsed: OrderedDict[tuple[str, str], Any]) -> None:
    llama_cpp = _llama()
    while parsed:
        llama_cpp.llama_sampler_free(parsed.popitem()[1])


class Grammar(Protocol):
    """A reply's grammar: forbids tokens in a candidate array, and follows the chosen ones."""

    def mask(self, data: npt.NDArray[np.void]) -> None:
        """Set the logit of every token the grammar forbids now to -inf."""

    def accept(self, token: int) -> None:
        """Move the grammar past `token`."""


class ReplyGrammar:
    """llama.cpp's grammar sampler for one reply (a clone from `Grammars.fresh`), freed with
    this object."""

    def __init__(self, sampler: Any) -> None:
        self.sampler = sampler
        weakref.finalize(self, _llama().llama_sampler_free, sampler)

    def mask(self, data: npt.NDArray[np.void]) -> None:
        _apply(self.sampler, data)

    def accept(self, token: int) -> None:
        _llama().llama_sampler_accept(self.sampler, token)


@dataclass
class Steps:
    """How the grammar decided each token of one reply."""

    shortlist: int = 0
    """Tokens decided by the tokens near the best alone."""
    wider: int = 0
    """Tokens decided by a wider cut of the highest tokens, short of the whole vocabulary."""
    full: int = 0
    """Tokens that needed the grammar applied to the whole vocabulary."""


class LazyGrammarSampler:
    """Stands in for llama-cpp-python's `LlamaSampler` in `Llama.sample` for one reply."""

    def __init__(
        self,
        grammar: Grammar,
        chain: Any,
        truncation: Truncation,
        n_vocab: int,
        spread: float = SPREAD,
        most: int = SHORTLIST,
    ) -> None:
        """`chain` is llama-cpp-python's chain built without the grammar (a `LlamaSampler`)."""
        self.grammar = grammar
        self.chain = chain
        self.truncation = truncation
        self.n_vocab = n_vocab
        self.spread = spread
        self.most = most
        self.steps = Steps()

    def sample(self, ctx: Any, idx: int = -1) -> int:
        """The next token from the logits at `idx` (llama-cpp-python's sampler interface)."""
        pointer = _llama().llama_get_logits_ith(ctx.ctx, idx)
        return self.choose(np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)))

    def choose(self, logits: Logits) -> int:
        """The next token; the grammar and the chain are told it was chosen."""
        ids, outside = shortlist(logits, self.spread, self.most)
        tier = "shortlist"
        while True:
            data = token_array(ids, logits)
            self.grammar.mask(data)
            if len(ids) >= self.n_vocab or decides(data["logit"], outside, self.truncation):
                break
            ids, outside = highest(logits, max(len(ids), self.most) * WIDEN)
            tier = "full" if len(ids) >= self.n_vocab else "wider"
        setattr(self.steps, tier, getattr(self.steps, tier) + 1)
        token = _apply(self.chain.sampler, data)
        if token < 0:
            raise GrammarDeadEnd("the grammar allows no token and the chain chose none")
        # The grammar's state must follow the reply: a grammar left at its first state
        # forbids nearly every token after the first, and every step falls back.
        self.grammar.accept(token)
        _llama().llama_sampler_accept(self.chain.sampler, token)
        return token
