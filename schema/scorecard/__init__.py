"""The scorecard contract: what the aggregator stores and `farm report --format json` prints:
the card (`card`), its rows (`rows`), conversations and simulated users (`conversations`),
answer quality (`answers`) and robustness (`robustness`). Every name is importable from here.

Versioned: a change to these models bumps SCORECARD_VERSION, and docs/scorecard.schema.json is
regenerated from them (`python -m mcp_farm.schema.scorecard`; a test holds the published file
equal to the models).
"""

from __future__ import annotations

from mcp_farm.schema.scorecard.answers import (
    ANCHOR_THRESHOLD,
    AnswerQuality,
    AnswerRow,
    JudgeVariance,
    Ranked,
)
from mcp_farm.schema.scorecard.card import SCORECARD_VERSION, Scorecard, rate_or_nan
from mcp_farm.schema.scorecard.conversations import (
    Conversations,
    SimulatedUsers,
    TurnRow,
    UserVariance,
)
from mcp_farm.schema.scorecard.robustness import (
    Curve,
    LevelPoint,
    PositionDecile,
    SelectionRecall,
)
from mcp_farm.schema.scorecard.rows import (
    DIMENSIONS,
    ConfigExtras,
    Dimension,
    Frozen,
    Latency,
    Provenance,
    Row,
    ToolCalls,
)

__all__ = [
    "ANCHOR_THRESHOLD",
    "DIMENSIONS",
    "SCORECARD_VERSION",
    "AnswerQuality",
    "AnswerRow",
    "ConfigExtras",
    "Conversations",
    "Curve",
    "Dimension",
    "Frozen",
    "JudgeVariance",
    "Latency",
    "LevelPoint",
    "PositionDecile",
    "Provenance",
    "Ranked",
    "Row",
    "Scorecard",
    "SelectionRecall",
    "SimulatedUsers",
    "ToolCalls",
    "TurnRow",
    "UserVariance",
    "rate_or_nan",
]
