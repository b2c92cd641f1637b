"""Task functions by published name (entry-point group `farm.tasks` in pyproject.toml).

The scheduler and the workers never import each other: each finds the other's task functions
here by name, exactly as Celery finds a task by name on a worker.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any, Protocol

from pydantic import BaseModel

from mcp_farm.schema.errors import FarmError
from mcp_farm.schema.settings import Settings


class TaskFn(Protocol):
    """A task function: its payload (the task's message model, or that model as JSON) and the
    process's settings in; its result message out (see mcp_farm.schema.tasks.messages)."""

    def __call__(
        self, payload: BaseModel | dict[str, Any], settings: Settings, /, **options: Any
    ) -> Any: ...


@lru_cache(maxsize=16)
def load_task(name: str) -> TaskFn:
    """A task function by its published name, e.g. `farm.run_trial` (looked up once: scanning
    the installed packages' entry points costs milliseconds)."""
    for ep in entry_points(group="farm.tasks"):
        if ep.name == name:
            fn: TaskFn = ep.load()
            return fn
    raise FarmError(
        f"no task named {name!r} is installed: reinstall the project (`pip install -e .`) "
        "so its entry points are registered"
    )
