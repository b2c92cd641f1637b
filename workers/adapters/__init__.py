"""Model adapters behind one protocol, registered by name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from schema import ModelTarget
from workers.adapters.base import ModelClient
from workers.errors import AdapterError

Factory = Callable[[ModelTarget, Path], ModelClient]


def _openai(target: ModelTarget, _cache: Path) -> ModelClient:
    from workers.adapters.openai import OpenAIClient

    return OpenAIClient(target)


def _local(target: ModelTarget, cache: Path) -> ModelClient:
    from workers.adapters.local import LocalClient

    return LocalClient(target, cache)


def _scripted(target: ModelTarget, _cache: Path) -> ModelClient:
    from workers.adapters.scripted import ScriptedClient

    return ScriptedClient(target)


ADAPTERS: dict[str, Factory] = {"openai": _openai, "local": _local, "scripted": _scripted}


def make_client(target: ModelTarget, model_cache_dir: Path) -> ModelClient:
    """The adapter for a model target; an unknown adapter is a clear error."""
    factory = ADAPTERS.get(target.adapter)
    if factory is None:
        raise AdapterError(
            f"model {target.id!r}: adapter {target.adapter!r} is not available on this worker; "
            f"available: {', '.join(sorted(ADAPTERS))}"
        )
    return factory(target, model_cache_dir)


__all__ = ["ADAPTERS", "ModelClient", "make_client"]
