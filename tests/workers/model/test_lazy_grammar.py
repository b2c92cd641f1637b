"""A grammar checked against the model's best tokens first picks the very token the grammar
applied to the whole vocabulary picks: at temperature 0, and above it with the same random
draw, through llama-cpp-python's own sampler chain. No model here: random logits, and a
grammar stood in for by one whose allowed tokens follow the tokens it accepted (the real
grammar and model are compared in test_lazy_grammar_real.py)."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from mcp_farm.workers.model.constrain import (
    LazyGrammarSampler,
    Truncation,
    decides,
    shortlist,
    token_array,
)

llama_cpp = pytest.importorskip("llama_cpp")

VOCAB = 4000


class StatefulGrammar:
    """Allows a set of tokens that depends on the last token accepted: now a handful (a key
    or a constant), now nearly all (inside a string), as a JSON grammar does."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.last = -1
        self.accepted: list[int] = []

    def allowed(self) -> npt.NDArray[np.bool_]:
        rng = np.random.default_rng([self.seed, self.last + 1])
        if rng.random() < 0.5:
            allowed = np.zeros(VOCAB, dtype=bool)
            allowed[rng.choice(VOCAB, size=int(rng.integers(1, 8)), replace=False)] = True
            return allowed
        return rng.random(VOCAB) < 0.9

    def mask(self, data: npt.NDArray[np.void]) -> None:
        data["logit"][~self.allowed()[data["id"]]] = -np.inf

    def accept(self, token: int) -> None:
        assert self.allowed()[token], "the grammar was handed a token it forbids"
        self.last = token
        self.accepted.append(token)


def _chain(temperature: float, top_p: float, seed: int) -> Any:
    """llama-cpp-python's own chain, without the grammar, from its own `_init_sampler`."""
    owner = SimpleNamespace(_seed=seed, last_n_tokens_size=64, _n_vocab=VOCAB)
    return llama_cpp.Llama._init_sampler(
        owner, top_k=40, top_p=top_p, min_p=0.05, typical_p=1.0, temp=temperature
    )


def _full(grammar: StatefulGrammar, chain: Any, logits: npt.NDArray[np.float32]) -> int:
    """The whole-vocabulary path: the grammar over every token, then the chain."""
    data = token_array(np.arange(VOCAB), logits)
    grammar.mask(data)
    view = llama_cpp.llama_token_data_array(
        data=data.ctypes.data_as(llama_cpp.llama_token_data_p),
        size=len(data),
        selected=-1,
        sorted=False,
    )
    llama_cpp.llama_sampler_apply(chain.sampler, view)
    token = int(view.data[view.selected].id)
    grammar.accept(token)
    llama_cpp.llama_sampler_accept(chain.sampler, token)
    return token


def _logits(rng: np.random.Generator) -> npt.NDArray[np.float32]:
    logits = rng.normal(scale=2.0, size=VOCAB).astype(np.float32)
    logits[rng.integers(VOCAB)] += float(rng.uniform(0, 12))  # a favourite, now and then sure
    return logits


@pytest.mark.parametrize(("temperature", "top_p"), [(0.0, 1.0), (0.3, 1.0), (0.8, 0.95)])
def test_the_shortlist_picks_the_token_the_whole_vocabulary_would(
    temperature: float, top_p: float
) -> None:
    truncation = Truncation(temperature=temperature, top_k=40, top_p=top_p, min_p=0.05)
    lazy = LazyGrammarSampler(
        StatefulGrammar(7), _chain(temperature, top_p, 3), truncation, VOCAB, spread=10, most=256
    )
    full_grammar, full_chain = StatefulGrammar(7), _chain(temperature, top_p, 3)
    rng = np.random.default_rng(11)
    for _ in range(300):
        logits = _logits(rng)
        assert lazy.choose(logits) == _full(full_grammar, full_chain, logits)
    assert lazy.steps.shortlist > 100 and lazy.steps.full > 0


def test_the_shortlist_is_the_tokens_near_the_best_in_id_order() -> None:
    logits = np.array([0.0, 5.0, -20.0, 9.0, 1.0, 8.5], dtype=np.float32)
    ids, outside = shortlist(logits, spread=5.0, most=5)
    assert ids.tolist() == [1, 3, 5]
    assert outside == 4.0
    assert all(logits[i] <= outside for i in range(6) if i not in ids)


def test_a_flat_distribution_keeps_only_the_highest_tokens() -> None:
    logits = np.arange(100, dtype=np.float32) / 100
    ids, outside = shortlist(logits, spread=10.0, most=8)
    assert ids.tolist() == list(range(92, 100))
    assert math.isclose(outside, 0.91, rel_tol=1e-6)


def test_greedy_is_decided_when_the_best_allowed_token_beats_everything_left_out() -> None:
    greedy = Truncation(temperature=0.0, top_k=40, top_p=1.0, min_p=0.05)
    masked = np.array([-np.inf, 3.0, 1.0], dtype=np.float32)
    assert decides(masked, 2.5, greedy)
    assert not decides(masked, 3.0, greedy)  # a token left out may tie it
    assert not decides(np.full(3, -np.inf, dtype=np.float32), -10.0, greedy)


def test_top_k_is_decided_when_the_kth_allowed_token_beats_everything_left_out() -> None:
    sampled = Truncation(temperature=0.7, top_k=2, top_p=0.9, min_p=0.0)
    masked = np.array([4.0, -np.inf, 3.0, 1.0], dtype=np.float32)
    assert decides(masked, 2.9, sampled)
    assert not decides(masked, 3.0, sampled)


def test_min_p_decides_when_nothing_left_out_could_survive_it_and_top_p_is_off() -> None:
    masked = np.array([4.0, -np.inf], dtype=np.float32)
    line = 4.0 + math.log(0.05)
    min_p = Truncation(temperature=0.3, top_k=40, top_p=1.0, min_p=0.05)
    assert decides(masked, line - 0.01, min_p)
    assert not decides(masked, line, min_p)
    nucleus = Truncation(temperature=0.3, top_k=40, top_p=0.95, min_p=0.05)
    assert not decides(masked, line - 0.01, nucleus)  # top-p would weigh the tokens left out
