"""What a user writes: scenarios, servers, prompt configurations, model targets, sweeps.

One module per thing described: `turn` (a conversation's turn, setup, forbidden and elicitation
calls), `scenario`, `server`, `suite` (a suite file, the server catalogue), `toollist` (the tool
list as a sweep axis), `prompts` (prompt configs, tool selection), `models` (model targets, agent
commands), `judge` (judge and simulated-user settings), `sweep` (the sweep, its gates), and
`environment` (environment variable names, the refusal of written-in secrets). Every name is
re-exported here, so `from mcp_farm.schema.specs import Scenario` reads as it always has."""

from mcp_farm.schema.expect import ExpectedCall, ParamMatcher
from mcp_farm.schema.placeholders import ENV_PLACEHOLDER
from mcp_farm.schema.specs.environment import (
    ENV_NAME,
    ENV_VAR,
    LITERAL_SECRETS,
    KeyedByEnvironment,
    secret_problem,
)
from mcp_farm.schema.specs.judge import (
    GRADER_VERSION,
    JudgeSettings,
    UserModel,
)
from mcp_farm.schema.specs.models import (
    AGENT_PLACEHOLDERS,
    LOCAL_MODELS,
    LOCAL_TOOL_RENDERING,
    AgentCommand,
    ModelTarget,
    ModelVia,
)
from mcp_farm.schema.specs.prompts import (
    LOCAL_EMBEDDING,
    SELECTION_VERSION,
    FewShot,
    GenerationParams,
    PromptConfig,
    Selection,
    ToolNaming,
)
from mcp_farm.schema.specs.scenario import (
    Scenario,
)
from mcp_farm.schema.specs.server import (
    DEFAULT_RESULT_CHARS,
    ResetCall,
    ServerDef,
    SharedLaunch,
)
from mcp_farm.schema.specs.suite import (
    ServerCatalog,
    Suite,
)
from mcp_farm.schema.specs.sweep import (
    CONVERSATION_METRICS,
    Gate,
    ScenarioSelection,
    SweepSpec,
)
from mcp_farm.schema.specs.toollist import (
    DESCRIPTION_REWRITES,
    DISTRACTOR_SERVER,
    DISTRACTORS_VERSION,
    LABEL,
    LABEL_MARK,
    Descriptions,
    Names,
    ToolListAxes,
    ToolListLevel,
    labelled,
    parse_label,
)
from mcp_farm.schema.specs.turn import (
    CallCounting,
    ElicitAnswer,
    ElicitValue,
    NeverCall,
    OnTurnFailure,
    SetupCall,
    Turn,
    TurnEvent,
)

__all__ = [
    "AGENT_PLACEHOLDERS",
    "CONVERSATION_METRICS",
    "DEFAULT_RESULT_CHARS",
    "DESCRIPTION_REWRITES",
    "DISTRACTORS_VERSION",
    "DISTRACTOR_SERVER",
    "ENV_NAME",
    "ENV_PLACEHOLDER",
    "ENV_VAR",
    "GRADER_VERSION",
    "LABEL",
    "LABEL_MARK",
    "LITERAL_SECRETS",
    "LOCAL_EMBEDDING",
    "LOCAL_MODELS",
    "LOCAL_TOOL_RENDERING",
    "SELECTION_VERSION",
    "AgentCommand",
    "CallCounting",
    "Descriptions",
    "ElicitAnswer",
    "ElicitValue",
    "ExpectedCall",
    "FewShot",
    "Gate",
    "GenerationParams",
    "JudgeSettings",
    "KeyedByEnvironment",
    "ModelTarget",
    "ModelVia",
    "Names",
    "NeverCall",
    "OnTurnFailure",
    "ParamMatcher",
    "PromptConfig",
    "ResetCall",
    "Scenario",
    "ScenarioSelection",
    "Selection",
    "ServerCatalog",
    "ServerDef",
    "SetupCall",
    "SharedLaunch",
    "Suite",
    "SweepSpec",
    "ToolListAxes",
    "ToolListLevel",
    "ToolNaming",
    "Turn",
    "TurnEvent",
    "UserModel",
    "labelled",
    "parse_label",
    "secret_problem",
]
