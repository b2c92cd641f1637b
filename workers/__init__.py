"""Data plane: task functions, the agent session, model adapters, MCP connections, grading."""

from mcp_farm.workers.errors import (
    AdapterError,
    InfraError,
    WorkerError,
)
from mcp_farm.workers.grading.grade import (
    Graded,
    grade,
)
from mcp_farm.workers.model.adapters import (
    ADAPTERS,
    ModelClient,
    make_client,
)
from mcp_farm.workers.node.tasks import run_trial
from mcp_farm.workers.store.results import save_trial
from mcp_farm.workers.trial import execute_trial

__all__ = [
    "ADAPTERS",
    "AdapterError",
    "Graded",
    "InfraError",
    "ModelClient",
    "WorkerError",
    "execute_trial",
    "grade",
    "make_client",
    "run_trial",
    "save_trial",
]
