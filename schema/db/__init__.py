"""The results database both planes share: SQLModel tables, the engine and session helpers, and
schema versions. The only part of the contracts that loads SQLAlchemy."""

from mcp_farm.schema.db.engine import (
    dialect_insert,
    init_db,
    make_engine,
    missing_sqlite_file,
    session_scope,
    upsert,
)
from mcp_farm.schema.db.migrate import LATEST as SCHEMA_VERSION
from mcp_farm.schema.db.migrate import (
    TEXT_SEARCH_INDEX,
    require_latest,
    schema_version,
    text_search_ready,
)
from mcp_farm.schema.db.tables import (
    AnchorCheckRow,
    AnswerScoreRow,
    JudgementRow,
    NodeRow,
    ScorecardRow,
    ScoringRow,
    SweepRow,
    ToolCallRow,
    TrialRow,
    UserTurnRow,
)

__all__ = [
    "SCHEMA_VERSION",
    "TEXT_SEARCH_INDEX",
    "AnchorCheckRow",
    "AnswerScoreRow",
    "JudgementRow",
    "NodeRow",
    "ScorecardRow",
    "ScoringRow",
    "SweepRow",
    "ToolCallRow",
    "TrialRow",
    "UserTurnRow",
    "dialect_insert",
    "init_db",
    "make_engine",
    "missing_sqlite_file",
    "require_latest",
    "schema_version",
    "session_scope",
    "text_search_ready",
    "upsert",
]
