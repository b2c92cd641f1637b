"""Data plane: task functions, the agent session, model adapters, MCP connections, grading."""

from workers.adapters import ADAPTERS, ModelClient, make_client
from workers.errors import AdapterError, InfraError, WorkerError
from workers.grading import Verdict, grade
from workers.store import save_trial
from workers.tasks import run_trial
from workers.trial import execute_trial

__all__ = [
    "ADAPTERS",
    "AdapterError",
    "InfraError",
    "ModelClient",
    "Verdict",
    "WorkerError",
    "execute_trial",
    "grade",
    "make_client",
    "run_trial",
    "save_trial",
]
