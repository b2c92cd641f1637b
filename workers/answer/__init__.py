"""The deterministic half of answer scoring: transcript partitioning, keyword coverage and
citation grounding at a pinned commit."""

from mcp_farm.workers.answer.grounding import (
    CitationRef,
    counts,
    extract,
    grounding_rate,
    verify,
)
from mcp_farm.workers.answer.keywords import (
    coverage,
    found,
)
from mcp_farm.workers.answer.partition import (
    Partitioned,
    partition,
)

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
