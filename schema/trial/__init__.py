"""The Celery payload (TrialSpec) and what a trial produces (TrialResult, ToolCallRecord): the
payload in `spec`, the recorded pieces in `records`, the simulated user's part in `user`, and
the result with its provenance in `result`. Every name is importable from here."""

from __future__ import annotations

from mcp_farm.schema.trial.records import (
    AGENT_OUTPUT_BYTES,
    AgentOutput,
    Elicitation,
    Message,
    StepVerdict,
    TokenCounts,
    ToolCallRecord,
    TranscriptCall,
    TurnResult,
)
from mcp_farm.schema.trial.result import (
    ListPosition,
    SelectionTurn,
    TrialProvenance,
    TrialResult,
)
from mcp_farm.schema.trial.spec import ScenarioRef, TrialSpec
from mcp_farm.schema.trial.user import UserError, UserErrorKind, UserIdentity, UserSimRecord

__all__ = [
    "AGENT_OUTPUT_BYTES",
    "AgentOutput",
    "Elicitation",
    "ListPosition",
    "Message",
    "ScenarioRef",
    "SelectionTurn",
    "StepVerdict",
    "TokenCounts",
    "ToolCallRecord",
    "TranscriptCall",
    "TrialProvenance",
    "TrialResult",
    "TrialSpec",
    "TurnResult",
    "UserError",
    "UserErrorKind",
    "UserIdentity",
    "UserSimRecord",
]
