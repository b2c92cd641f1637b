"""A trial's tool selection: the k tools a ranker scores highest for what the user said.

The model is shown only those; the whole list is kept, and each user message (a scripted
turn's, or a simulated user's) selects again from it. Per user message, the share of the
expected tools the selection held (selection recall) is recorded, so a failure can be put on
the selector or on the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from mcp_farm.schema.specs import LOCAL_EMBEDDING, Selection
from mcp_farm.workers.model.toolspec import ToolSpec
from mcp_farm.workers.selection.bm25 import Bm25


class Ranker(Protocol):
    """Scores each tool of a list for a query; higher is a better match."""

    async def scores(self, query: str, tools: list[ToolSpec]) -> list[float]: ...


def ranker_for(how: Selection) -> Ranker:
    """The ranker a prompt config's `select:` names."""
    if how.method == "bm25":
        return Bm25()
    # Imported here: the embedding methods load numpy and an HTTP client or a model only
    # for the trials that use them.
    from mcp_farm.workers.selection.embeddings import EmbeddingRanker, EndpointEmbedder
    from mcp_farm.workers.selection.local import LocalEmbedder

    if how.model == LOCAL_EMBEDDING:
        return EmbeddingRanker(LocalEmbedder())
    return EmbeddingRanker(EndpointEmbedder(how))


@dataclass
class Selector:
    """A trial's selection: the whole list, how it is ranked, and the recall of each
    selection made."""

    how: Selection
    offered: dict[str, ToolSpec]
    ranker: Ranker | None = None
    """Left out: the one `how` names."""
    recalls: list[float | None] = field(default_factory=list)

    async def select(self, said: str, expected: list[str]) -> dict[str, ToolSpec]:
        """The k best tools for `said`, in the list's order (ties: earlier in the list); records
        the share of `expected` (real tool names) among them (None when none is expected)."""
        if self.ranker is None:
            self.ranker = ranker_for(self.how)
        tools = list(self.offered.values())
        scores = await self.ranker.scores(said, tools)
        best = sorted(range(len(tools)), key=lambda i: (-scores[i], i))[: self.how.k]
        kept = {tools[i].shown_name: tools[i] for i in sorted(best)}
        wanted = set(expected)
        held = {t.tool for t in kept.values()}
        self.recalls.append(len(wanted & held) / len(wanted) if wanted else None)
        return kept
