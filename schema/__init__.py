"""Contracts: specs, the trial payload, result vocabularies, tables, ids and settings."""

from schema.db import init_db, make_engine, session_scope
from schema.errors import FarmError, SpecError, StoreError
from schema.ids import canonical_json, digest
from schema.loading import load_yaml_model, read_yaml, require_unique, validate
from schema.settings import Settings, get_settings
from schema.specs import (
    LOCAL_MODELS,
    ExpectedCall,
    FewShot,
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
from schema.tables import SweepRow, ToolCallRow, TrialRow
from schema.trial import (
    Message,
    Provenance,
    ScenarioRef,
    TokenCounts,
    ToolCallRecord,
    TrialResult,
    TrialSpec,
)
from schema.vocab import OUTCOMES, AdapterName, Outcome, StopReason, Tier, ToolMode, TrialStatus

__all__ = [
    "LOCAL_MODELS",
    "OUTCOMES",
    "AdapterName",
    "ExpectedCall",
    "FarmError",
    "FewShot",
    "GenerationParams",
    "Message",
    "ModelTarget",
    "Outcome",
    "ParamMatcher",
    "PromptConfig",
    "Provenance",
    "Scenario",
    "ScenarioRef",
    "ScenarioSelection",
    "ServerCatalog",
    "ServerDef",
    "Settings",
    "SpecError",
    "StopReason",
    "StoreError",
    "Suite",
    "SweepRow",
    "SweepSpec",
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
    "digest",
    "get_settings",
    "init_db",
    "load_yaml_model",
    "make_engine",
    "read_yaml",
    "require_unique",
    "session_scope",
    "validate",
]
