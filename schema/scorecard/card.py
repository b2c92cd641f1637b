"""The scorecard itself: every table of one sweep, versioned as one contract."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from mcp_farm.schema.scorecard.answers import AnswerQuality
from mcp_farm.schema.scorecard.conversations import (
    Conversations,
    SimulatedUsers,
    TurnRow,
)
from mcp_farm.schema.scorecard.robustness import (
    Curve,
    PositionDecile,
    SelectionRecall,
)
from mcp_farm.schema.scorecard.rows import (
    ConfigExtras,
    Dimension,
    Frozen,
    Provenance,
    Row,
    ToolCalls,
)

SCORECARD_VERSION = 21
"""Bumped by every change to the scorecard's models (docs/scorecard.schema.json follows)."""


class Scorecard(Frozen):
    schema_version: int = SCORECARD_VERSION
    sweep_id: str
    built_at: str
    total: int
    done: int
    """Trials recorded (infra and harness errors included); rates exclude both."""
    rows: list[Row]
    extras: list[ConfigExtras]
    tool_calls: list[ToolCalls]
    latency_bins: list[float]
    """Upper edges (seconds) of the latency histogram bins; the last bin is open."""
    provenance: Provenance
    answers: AnswerQuality | None = None
    """Answer quality (fairness, adoption, grounding, judge variance) for sweeps that score it."""
    conversations: list[Conversations] = Field(default_factory=list)
    """Per config with conversation scenarios: turn and conversation pass rates, pass^k, and
    where the failed conversations first failed; empty for a sweep without conversations."""
    turns: list[TurnRow] = Field(default_factory=list)
    """Per config, conversation scenario and turn: its verdicts over the repetitions."""
    simulated_users: list[SimulatedUsers] = Field(default_factory=list)
    """Per config with simulated-user scenarios: pass rates with and without user errors, and
    failures by source; empty for a sweep without a simulated user."""
    robustness: list[Curve] = Field(default_factory=list)
    """Per configuration run at several tool counts (a sweep's `tool_list`): the curve of pass
    rate against tool count; empty for a sweep without the axis."""
    positions: list[PositionDecile] = Field(default_factory=list)
    """Per curve, the pass rate by the decile of the list the expected tool sat in, over its
    levels with distractors; empty for a sweep without them (or recorded before positions)."""
    selection: list[SelectionRecall] = Field(default_factory=list)
    """Per configuration whose prompt selects tools before the model: selection recall and
    failures split between selector and model; empty for a sweep without selection."""
    left_cassette: Literal["count", "exclude"] = "count"
    """How trials that left their cassette are counted (the sweep's `left_cassette`): `count`
    like any trial, or `exclude`d from every row's rates, outcomes and latency; how many there
    were is each config's `ConfigExtras.left_cassette` either way."""

    def of(self, dimension: Dimension) -> list[Row]:
        return [r for r in self.rows if r.dimension == dimension]

    def harness_errors(self) -> int:
        """Trials that hit a bug in the farm itself (`harness_error`): in no rate, always shown."""
        return sum(r.outcomes.get("harness_error", 0) for r in self.of("config"))


def rate_or_nan(value: float | None) -> float:
    return math.nan if value is None else value
