"""Contracts: specs, the trial payload, result vocabularies, tables, ids and settings."""

from schema.broker import CONTROL_QUEUE, declared_queues, make_celery, queue_for
from schema.db import dialect_insert, init_db, make_engine, session_scope, upsert
from schema.errors import FarmError, SpecError, StoreError
from schema.ids import canonical_json, digest
from schema.loading import load_yaml_model, read_yaml, require_unique, validate
from schema.migrate import LATEST as SCHEMA_VERSION
from schema.migrate import require_latest, schema_version
from schema.plugins import TaskFn, load_task
from schema.settings import Settings, get_settings
from schema.specs import (
    LOCAL_MODELS,
    ExpectedCall,
    FewShot,
    Gate,
    GenerationParams,
    ModelTarget,
    ParamMatcher,
    PromptConfig,
    Scenario,
    ScenarioSelection,
    ServerCatalog,
    ServerDef,
    Suite,
    SweepSpec,
)
from schema.tables import NodeRow, ScorecardRow, SweepRow, ToolCallRow, TrialRow
from schema.trial import (
    Message,
    Provenance,
    ScenarioRef,
    TokenCounts,
    ToolCallRecord,
    TrialResult,
    TrialSpec,
)
from schema.vocab import (
    OUTCOMES,
    AdapterName,
    Outcome,
    StopReason,
    SweepStatus,
    Tier,
    ToolMode,
    TrialStatus,
)

__all__ = [
    "CONTROL_QUEUE",
    "LOCAL_MODELS",
    "OUTCOMES",
    "SCHEMA_VERSION",
    "AdapterName",
    "ExpectedCall",
    "FarmError",
    "FewShot",
    "Gate",
    "GenerationParams",
    "Message",
    "ModelTarget",
    "NodeRow",
    "Outcome",
    "ParamMatcher",
    "PromptConfig",
    "Provenance",
    "Scenario",
    "ScenarioRef",
    "ScenarioSelection",
    "ScorecardRow",
    "ServerCatalog",
    "ServerDef",
    "Settings",
    "SpecError",
    "StopReason",
    "StoreError",
    "Suite",
    "SweepRow",
    "SweepSpec",
    "SweepStatus",
    "TaskFn",
    "Tier",
    "TokenCounts",
    "ToolCallRecord",
    "ToolCallRow",
    "ToolMode",
    "TrialResult",
    "TrialRow",
    "TrialSpec",
    "TrialStatus",
    "canonical_json",
    "declared_queues",
    "dialect_insert",
    "digest",
    "get_settings",
    "init_db",
    "load_task",
    "load_yaml_model",
    "make_celery",
    "make_engine",
    "queue_for",
    "read_yaml",
    "require_latest",
    "require_unique",
    "schema_version",
    "session_scope",
    "upsert",
    "validate",
]
