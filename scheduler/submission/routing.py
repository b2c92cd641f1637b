"""The one place a trial meets a queue: its model's hardware tag names it."""

from __future__ import annotations

from mcp_farm.schema import (
    FarmError,
    ModelTarget,
    Settings,
)
from mcp_farm.schema.tasks.broker import queue_for


class RoutingError(FarmError):
    """A model is bound to a hardware tag that has no queue."""


def queue_of(model: ModelTarget, settings: Settings) -> str:
    """`farm.hw.<tag>` for the model's hardware tag; RoutingError for an undeclared tag."""
    declared = settings.declared_tags()
    if model.hardware not in declared:
        raise RoutingError(
            f"model {model.id!r} runs on hardware {model.hardware!r}, which has no queue: "
            f"declared tags are {', '.join(declared)} (add it to FARM_HARDWARE_TAGS on the "
            "head node and on the workers that serve it)"
        )
    return queue_for(model.hardware)
