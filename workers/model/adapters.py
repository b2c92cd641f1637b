"""Model adapters behind one protocol, registered by name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mcp_farm.schema import ModelTarget
from mcp_farm.workers.errors import AdapterError
from mcp_farm.workers.model.base import ModelClient

Factory = Callable[[ModelTarget, Path, int], ModelClient]


def _openai(target: ModelTarget, _cache: Path, _threads: int) -> ModelClient:
    from mcp_farm.workers.model.openai import OpenAIClient

    return OpenAIClient(target)


def _local(target: ModelTarget, cache: Path, threads: int) -> ModelClient:
    from mcp_farm.workers.model.local import LocalClient

    return LocalClient(target, cache, threads=threads)


def _scripted(target: ModelTarget, _cache: Path, _threads: int) -> ModelClient:
    from mcp_farm.workers.model.scripted import ScriptedClient

    return ScriptedClient(target)


def _replay(target: ModelTarget, _cache: Path, _threads: int) -> ModelClient:
    from mcp_farm.workers.model.replay import ReplayClient

    return ReplayClient(target)


def _agent(target: ModelTarget, _cache: Path, _threads: int) -> ModelClient:
    from mcp_farm.workers.agent import AgentClient

    return AgentClient(target)


ADAPTERS: dict[str, Factory] = {
    "openai": _openai,
    "local": _local,
    "scripted": _scripted,
    "replay": _replay,
    "agent": _agent,
}


def make_client(target: ModelTarget, model_cache_dir: Path, threads: int = 2) -> ModelClient:
    """The adapter for a model target; an unknown adapter is a clear error. `threads` is the
    in-process model's decoding threads (`Settings.local_threads`)."""
    factory = ADAPTERS.get(target.adapter)
    if factory is None:
        raise AdapterError(
            f"model {target.id!r}: adapter {target.adapter!r} is not available on this worker; "
            f"available: {', '.join(sorted(ADAPTERS))}"
        )
    return factory(target, model_cache_dir, threads)


__all__ = ["ADAPTERS", "ModelClient", "make_client"]
