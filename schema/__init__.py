"""Contracts: specs, the trial payload, result vocabularies, ids and settings.

Pydantic only: importing this loads neither Celery nor SQLAlchemy. The database tables and engine
are in `mcp_farm.schema.db`; the broker's queues, task lookup by name and the typed task messages
in `mcp_farm.schema.tasks`.

Names load on first use (PEP 562): `from mcp_farm.schema import FarmError` reads only the
errors module, which keeps `farm --help` and the workers' start light."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_farm.schema.answer import (
        GROUNDINGS,
        AdoptionWeights,
        AnswerScore,
        AnswerSpec,
        Citation,
        CodeRepo,
        Criterion,
        FairnessWeights,
        Grounding,
        JudgeScore,
        Rubric,
        RubricStep,
        ToolSet,
        Weights,
    )
    from mcp_farm.schema.errors import (
        FarmError,
        SpecError,
        StoreError,
    )
    from mcp_farm.schema.expect import (
        Route,
        ToolChoice,
        ToolOption,
        order_problems,
    )
    from mcp_farm.schema.ids import (
        canonical_json,
        digest,
    )
    from mcp_farm.schema.parse.loading import (
        load_yaml_model,
        read_yaml,
        require_unique,
        spec_errors,
        validate,
    )
    from mcp_farm.schema.redact import (
        has_credentials,
        mask_known,
        mask_secrets,
        mask_url,
        remember_secret,
        remember_url_password,
    )
    from mcp_farm.schema.settings import (
        Settings,
        get_settings,
    )
    from mcp_farm.schema.specs import (
        DEFAULT_RESULT_CHARS,
        ENV_PLACEHOLDER,
        GRADER_VERSION,
        LOCAL_MODELS,
        ExpectedCall,
        FewShot,
        Gate,
        GenerationParams,
        JudgeSettings,
        ModelTarget,
        ParamMatcher,
        PromptConfig,
        ResetCall,
        Scenario,
        ScenarioSelection,
        ServerCatalog,
        ServerDef,
        SetupCall,
        SharedLaunch,
        Suite,
        SweepSpec,
    )
    from mcp_farm.schema.tasks.registry import (
        TaskFn,
        load_task,
    )
    from mcp_farm.schema.trial import (
        Message,
        ScenarioRef,
        TokenCounts,
        ToolCallRecord,
        TranscriptCall,
        TrialProvenance,
        TrialResult,
        TrialSpec,
    )
    from mcp_farm.schema.vocab import (
        OUTCOMES,
        UNGRADED,
        AdapterName,
        Outcome,
        StopReason,
        SweepStatus,
        Tier,
        ToolMode,
        TrialStatus,
    )

_HOMES: dict[str, str] = {
    "AdoptionWeights": "mcp_farm.schema.answer",
    "AnswerScore": "mcp_farm.schema.answer",
    "AnswerSpec": "mcp_farm.schema.answer",
    "Citation": "mcp_farm.schema.answer",
    "CodeRepo": "mcp_farm.schema.answer",
    "Criterion": "mcp_farm.schema.answer",
    "FairnessWeights": "mcp_farm.schema.answer",
    "GROUNDINGS": "mcp_farm.schema.answer",
    "Grounding": "mcp_farm.schema.answer",
    "JudgeScore": "mcp_farm.schema.answer",
    "Rubric": "mcp_farm.schema.answer",
    "RubricStep": "mcp_farm.schema.answer",
    "ToolSet": "mcp_farm.schema.answer",
    "Weights": "mcp_farm.schema.answer",
    "FarmError": "mcp_farm.schema.errors",
    "SpecError": "mcp_farm.schema.errors",
    "StoreError": "mcp_farm.schema.errors",
    "Route": "mcp_farm.schema.expect",
    "ToolChoice": "mcp_farm.schema.expect",
    "ToolOption": "mcp_farm.schema.expect",
    "order_problems": "mcp_farm.schema.expect",
    "canonical_json": "mcp_farm.schema.ids",
    "digest": "mcp_farm.schema.ids",
    "load_yaml_model": "mcp_farm.schema.parse.loading",
    "read_yaml": "mcp_farm.schema.parse.loading",
    "require_unique": "mcp_farm.schema.parse.loading",
    "spec_errors": "mcp_farm.schema.parse.loading",
    "validate": "mcp_farm.schema.parse.loading",
    "has_credentials": "mcp_farm.schema.redact",
    "mask_known": "mcp_farm.schema.redact",
    "mask_secrets": "mcp_farm.schema.redact",
    "mask_url": "mcp_farm.schema.redact",
    "remember_secret": "mcp_farm.schema.redact",
    "remember_url_password": "mcp_farm.schema.redact",
    "Settings": "mcp_farm.schema.settings",
    "get_settings": "mcp_farm.schema.settings",
    "DEFAULT_RESULT_CHARS": "mcp_farm.schema.specs",
    "ENV_PLACEHOLDER": "mcp_farm.schema.specs",
    "ExpectedCall": "mcp_farm.schema.specs",
    "FewShot": "mcp_farm.schema.specs",
    "GRADER_VERSION": "mcp_farm.schema.specs",
    "Gate": "mcp_farm.schema.specs",
    "GenerationParams": "mcp_farm.schema.specs",
    "JudgeSettings": "mcp_farm.schema.specs",
    "LOCAL_MODELS": "mcp_farm.schema.specs",
    "ModelTarget": "mcp_farm.schema.specs",
    "ParamMatcher": "mcp_farm.schema.specs",
    "PromptConfig": "mcp_farm.schema.specs",
    "ResetCall": "mcp_farm.schema.specs",
    "Scenario": "mcp_farm.schema.specs",
    "ScenarioSelection": "mcp_farm.schema.specs",
    "ServerCatalog": "mcp_farm.schema.specs",
    "ServerDef": "mcp_farm.schema.specs",
    "SetupCall": "mcp_farm.schema.specs",
    "SharedLaunch": "mcp_farm.schema.specs",
    "Suite": "mcp_farm.schema.specs",
    "SweepSpec": "mcp_farm.schema.specs",
    "TaskFn": "mcp_farm.schema.tasks.registry",
    "load_task": "mcp_farm.schema.tasks.registry",
    "Message": "mcp_farm.schema.trial",
    "ScenarioRef": "mcp_farm.schema.trial",
    "TokenCounts": "mcp_farm.schema.trial",
    "ToolCallRecord": "mcp_farm.schema.trial",
    "TranscriptCall": "mcp_farm.schema.trial",
    "TrialProvenance": "mcp_farm.schema.trial",
    "TrialResult": "mcp_farm.schema.trial",
    "TrialSpec": "mcp_farm.schema.trial",
    "AdapterName": "mcp_farm.schema.vocab",
    "OUTCOMES": "mcp_farm.schema.vocab",
    "Outcome": "mcp_farm.schema.vocab",
    "StopReason": "mcp_farm.schema.vocab",
    "SweepStatus": "mcp_farm.schema.vocab",
    "Tier": "mcp_farm.schema.vocab",
    "ToolMode": "mcp_farm.schema.vocab",
    "TrialStatus": "mcp_farm.schema.vocab",
    "UNGRADED": "mcp_farm.schema.vocab",
}
"""Where each name of this face lives."""

__all__ = [
    "DEFAULT_RESULT_CHARS",
    "ENV_PLACEHOLDER",
    "GRADER_VERSION",
    "GROUNDINGS",
    "LOCAL_MODELS",
    "OUTCOMES",
    "UNGRADED",
    "AdapterName",
    "AdoptionWeights",
    "AnswerScore",
    "AnswerSpec",
    "Citation",
    "CodeRepo",
    "Criterion",
    "ExpectedCall",
    "FairnessWeights",
    "FarmError",
    "FewShot",
    "Gate",
    "GenerationParams",
    "Grounding",
    "JudgeScore",
    "JudgeSettings",
    "Message",
    "ModelTarget",
    "Outcome",
    "ParamMatcher",
    "PromptConfig",
    "ResetCall",
    "Route",
    "Rubric",
    "RubricStep",
    "Scenario",
    "ScenarioRef",
    "ScenarioSelection",
    "ServerCatalog",
    "ServerDef",
    "Settings",
    "SetupCall",
    "SharedLaunch",
    "SpecError",
    "StopReason",
    "StoreError",
    "Suite",
    "SweepSpec",
    "SweepStatus",
    "TaskFn",
    "Tier",
    "TokenCounts",
    "ToolCallRecord",
    "ToolChoice",
    "ToolMode",
    "ToolOption",
    "ToolSet",
    "TranscriptCall",
    "TrialProvenance",
    "TrialResult",
    "TrialSpec",
    "TrialStatus",
    "Weights",
    "canonical_json",
    "digest",
    "get_settings",
    "has_credentials",
    "load_task",
    "load_yaml_model",
    "mask_known",
    "mask_secrets",
    "mask_url",
    "order_problems",
    "read_yaml",
    "remember_secret",
    "remember_url_password",
    "require_unique",
    "spec_errors",
    "validate",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
