"""The deterministic half of answer scoring: transcript partitioning, keyword coverage and
citation grounding at a pinned commit."""

from workers.answer.grounding import CitationRef, counts, extract, grounding_rate, verify
from workers.answer.keywords import coverage, found
from workers.answer.partition import Partitioned, partition

__all__ = [
    "CitationRef",
    "Partitioned",
    "counts",
    "coverage",
    "extract",
    "found",
    "grounding_rate",
    "partition",
    "verify",
]
