"""A Celery app with the farm's broker configuration and one no-op task: the baseline."""

from __future__ import annotations

from typing import Any

from mcp_farm.schema import get_settings
from mcp_farm.schema.tasks.broker import make_celery

app = make_celery(get_settings(), name="bench")


@app.task(name="bench.noop")  # type: ignore[untyped-decorator]
def noop(payload: dict[str, Any]) -> None:
    return None
