"""The one protocol every model adapter implements."""

from __future__ import annotations

from typing import Protocol

from mcp_farm.schema import (
    Message,
    PromptConfig,
)
from mcp_farm.workers.model.toolspec import (
    ModelReply,
    ToolSpec,
)


class ModelClient(Protocol):
    """Talks to one model. Stateless across trials except for caches it owns."""

    pins: dict[str, str]
    """Facts about the serving stack that change results (recorded with every trial)."""

    async def complete(
        self, messages: list[Message], tools: list[ToolSpec], prompt: PromptConfig, seed: int
    ) -> ModelReply:
        """One model turn. Native mode returns decoded calls; text modes return raw text."""
        ...
