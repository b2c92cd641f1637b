"""When a grammar checked against only the model's best tokens decides a reply's next token
exactly as the grammar applied to the whole vocabulary would.

llama-cpp-python's stock chain after the grammar is top-k → typical → top-p → min-p →
temperature → dist, or greedy alone at temperature 0. Every token outside a shortlist of the
highest logits has a logit no higher than a known line (`outside`), so:

- greedy: the best allowed token in the shortlist is the whole vocabulary's best allowed token
  when its logit beats `outside`;
- top-k: the k best allowed tokens are all in the shortlist when the k-th of them beats
  `outside`, and everything after top-k sees only those k;
- min-p (with top-p and typical off): min-p drops every token below the best allowed logit
  plus ln(min_p), so when `outside` is below that line no token outside the shortlist can
  survive, whatever the grammar says about it.

Otherwise the caller applies the grammar to the whole vocabulary. Pure numpy: no model here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
"""llama.cpp's `llama_token_data`, so that a numpy array can be handed to its samplers."""

MIN_P_MARGIN = 1e-3
"""Logits kept clear of min-p's line: llama.cpp computes it in float32, this check in float64;
a token that close to the line falls back to the whole vocabulary rather than risk a bit."""

Logits = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Truncation:
    """The samplers that follow the grammar in llama-cpp-python's stock chain."""

    temperature: float
    """0: greedy; above 0: top-k, typical, top-p, min-p, temperature, dist."""
    top_k: int
    """Tokens kept by top-k; 0 or less keeps all."""
    top_p: float
    """Nucleus mass kept; 1 or more turns top-p off."""
    min_p: float
    """Tokens below this share of the best token's probability are dropped; 0 turns it off."""
    typical_p: float = 1.0
    """Locally typical mass kept; 1 or more turns it off."""


def shortlist(logits: Logits, spread: float, most: int) -> tuple[npt.NDArray[np.int64], float]:
    """The tokens whose logit is within `spread` of the best (at most `most` of them, the
    highest), in id order (llama.cpp hands the whole vocabulary to its samplers in id order,
    and greedy keeps the first of equal logits); and a logit that no token left out exceeds."""
    line = float(logits.max()) - spread
    ids = np.flatnonzero(logits > line)
    if len(ids) <= most:
        return ids, line
    return highest(logits, most)  # a flat distribution


def highest(logits: Logits, most: int) -> tuple[npt.NDArray[np.int64], float]:
    """The `most` highest logits' tokens in id order, and the highest logit left out (-inf
    when none is)."""
    n = int(logits.shape[0])
    if most >= n:
        return np.arange(n), -math.inf
    order = np.argpartition(logits, n - most - 1)
    return np.sort(order[n - most :]), float(logits[order[n - most - 1]])


def token_array(ids: npt.NDArray[np.int64], logits: Logits) -> npt.NDArray[np.void]:
    """Candidates for llama.cpp's samplers: the given ids with their logits."""
    data = np.empty(len(ids), dtype=TOKEN_DATA)
    data["id"] = ids
    data["logit"] = logits[ids]
    data["p"] = 0.0
    return data


def decides(masked: Logits, outside: float, truncation: Truncation) -> bool:
    """Whether the shortlist's logits after the grammar (-inf where it forbids a token) give
    the token the whole masked vocabulary would, under the samplers that follow."""
    allowed = masked[np.isfinite(masked)]
    if allowed.size == 0:
        return False
    best = float(allowed.max())
    if truncation.temperature == 0:
        return best > outside
    k = truncation.top_k
    if 0 < k <= allowed.size and float(np.partition(allowed, allowed.size - k)[-k]) > outside:
        return True
    return (
        truncation.top_p >= 1.0
        and truncation.typical_p >= 1.0
        and truncation.min_p > 0
        and outside < best + math.log(truncation.min_p) - MIN_P_MARGIN
    )
