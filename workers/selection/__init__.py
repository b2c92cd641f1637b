"""Tool selection before the model: rankers (BM25, embeddings from an endpoint or a bundled
model) and the per-trial selector that records selection recall (docs/robustness.md)."""

from mcp_farm.workers.selection.selector import Ranker, Selector, ranker_for

__all__ = ["Ranker", "Selector", "ranker_for"]
