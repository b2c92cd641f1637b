"""Constrained decoding for the in-process llama.cpp model: grammars parsed once and checked
against the model's best tokens before the whole vocabulary."""

from mcp_farm.workers.model.constrain.candidates import (
    Truncation,
    decides,
    shortlist,
    token_array,
)
from mcp_farm.workers.model.constrain.sampler import (
    SHORTLIST,
    SPREAD,
    Grammar,
    Grammars,
    LazyGrammarSampler,
    ReplyGrammar,
    Steps,
)

__all__ = [
    "SHORTLIST",
    "SPREAD",
    "Grammar",
    "Grammars",
    "LazyGrammarSampler",
    "ReplyGrammar",
    "Steps",
    "Truncation",
    "decides",
    "shortlist",
    "token_array",
]
