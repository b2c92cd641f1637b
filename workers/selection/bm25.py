"""BM25 ranking of a tool list for what the user said: each tool a document of its shown name
(split at `_` and camelCase), description and parameter names, stop words left out of both.
Written here, no package."""

from __future__ import annotations

import math
import re
from collections import Counter

from mcp_farm.workers.model.toolspec import ToolSpec

K1, B = 1.2, 0.75
"""The usual BM25 constants: term-frequency saturation and length normalisation."""
WORD = re.compile(r"[a-z0-9]+")
_STOP = """a about above after again against all am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into is it
its itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own please same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself yourselves"""
STOP_WORDS = frozenset(_STOP.split())
"""English function words (the usual retrieval list, less the few that name tools' actions:
`find`, `list`, `show` and the like are kept): a user's "what is in the folder" matches a
tool by `folder`, not by `the`, `is` and `in`, which nearly every description holds."""


def words(text: str) -> list[str]:
    """Lower-case words; snake_case and camelCase names split into their parts."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text).replace("_", " ")
    return WORD.findall(spaced.lower())


def terms(text: str) -> list[str]:
    """The words BM25 matches on: `words` less STOP_WORDS."""
    return [w for w in words(text) if w not in STOP_WORDS]


def tool_text(tool: ToolSpec) -> str:
    """What a tool is found by: its shown name (split into words), description and parameter
    names. The embedding methods embed the same text."""
    params = " ".join((tool.input_schema.get("properties") or {}).keys())
    return f"{tool.shown_name} {tool.description} {params}"


def bm25_ranks(query: str, tools: list[ToolSpec]) -> list[float]:
    """The BM25 score of each tool (as a document) for the query."""
    docs = [Counter(terms(tool_text(t))) for t in tools]
    lengths = [sum(d.values()) for d in docs]
    mean = sum(lengths) / len(docs) if docs else 0.0
    asked = set(terms(query))
    scores = []
    for doc, length in zip(docs, lengths, strict=True):
        score = 0.0
        for term in asked:
            tf = doc.get(term, 0)
            if not tf:
                continue
            having = sum(1 for d in docs if term in d)
            idf = math.log(1 + (len(docs) - having + 0.5) / (having + 0.5))
            norm = tf + K1 * (1 - B + B * length / (mean or 1.0))
            score += idf * tf * (K1 + 1) / norm
        scores.append(score)
    return scores


class Bm25:
    """The `bm25` method as a Ranker."""

    async def scores(self, query: str, tools: list[ToolSpec]) -> list[float]:
        return bm25_ranks(query, tools)
