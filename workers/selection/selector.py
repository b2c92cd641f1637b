"""A trial's tool selection: the k tools a ranker scores highest for what the user said.

The model is shown only those; the whole list is kept, and each user message (a scripted
turn's, or a simulated user's) selects again from it. Tools that score the same are ordered by
the trial's seed, never by their place in the list. Per user message, the share of the
expected tools the selection held (selection recall), whether a tie decided it, where each
expected tool ranked and how long it took are recorded, so a failure can be put on the
selector or on the model. Selecting runs outside the scenario's clock, within its own limit.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Protocol

import anyio

from mcp_farm.schema import SelectionTurn, digest
from mcp_farm.schema.specs import LOCAL_EMBEDDING, Selection
from mcp_farm.workers.clock import clock_stopped
from mcp_farm.workers.errors import InfraError
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


def label(how: Selection) -> str:
    """The selector as an error names it: `bm25`, or `embedding (model)`."""
    return how.method if how.method == "bm25" else f"{how.method} ({how.model})"


@dataclass
class Selector:
    """A trial's selection: the whole list, how it is ranked, and a record of each selection
    made (`turns`)."""

    how: Selection
    offered: dict[str, ToolSpec]
    ranker: Ranker | None = None
    """Left out: the one `how` names."""
    seed: int = 0
    """The trial's seed: it orders tools whose scores tie."""
    clock: anyio.CancelScope | None = None
    """The scenario's clock, held while a selection runs."""
    turns: list[SelectionTurn] = field(default_factory=list)
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(digest([self.seed, "selection"]))

    @property
    def recalls(self) -> list[float | None]:
        return [t.recall for t in self.turns]

    @property
    def seconds(self) -> float:
        return sum(t.seconds for t in self.turns)

    async def select(self, said: str, expected: list[str]) -> dict[str, ToolSpec]:
        """The k best tools for `said`, shown in the list's order; ties between equal scores
        broken by the trial's seed. Records the selection: the share of `expected` (real tool
        names) it held (None when none is expected), whether a tie decided it, each expected
        tool's rank and its time. InfraError naming the selector past `timeout_s`."""
        if self.ranker is None:
            self.ranker = ranker_for(self.how)
        tools = list(self.offered.values())
        started = time.perf_counter()
        with clock_stopped(self.clock), anyio.move_on_after(self.how.timeout_s) as waited:
            scores = await self.ranker.scores(said, tools)
        seconds = time.perf_counter() - started
        if waited.cancelled_caught:
            raise InfraError(
                f"tool selection ({label(self.how)}) took more than {self.how.timeout_s:g} s "
                "for one user message (select.timeout_s)"
            )
        draw = [self.rng.random() for _ in tools]
        order = sorted(range(len(tools)), key=lambda i: (-scores[i], draw[i]))
        k = self.how.k
        best = order[:k]
        kept = {tools[i].shown_name: tools[i] for i in sorted(best)}
        tied = len(tools) > k and scores[order[k - 1]] == scores[order[k]]
        place: dict[str, int] = {}
        for rank, i in enumerate(order, 1):
            place.setdefault(tools[i].tool, rank)
        wanted = list(dict.fromkeys(expected))
        held = {t.tool for t in kept.values()}
        recall = len(set(wanted) & held) / len(wanted) if wanted else None
        ranks = [place.get(name) for name in wanted]
        self.turns.append(SelectionTurn(recall=recall, tied=tied, ranks=ranks, seconds=seconds))
        return kept
