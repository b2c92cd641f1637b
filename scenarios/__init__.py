"""What is tested against: suites, prompt configs, example sweeps, fixture MCP servers.

Names load on first use (PEP 562), as in `mcp_farm.schema`: every fixture server process
imports this package before its own module, and it needs none of the suite loader."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_farm.scenarios.catalog import (
        FIXTURES_DIR,
        ScenarioError,
        find_scenario,
        load_prompt,
        load_rubric,
        load_suite,
        sandbox_source,
        select,
        server_catalog,
        servers_for,
        suite_path,
    )

__all__ = [
    "FIXTURES_DIR",
    "ScenarioError",
    "find_scenario",
    "load_prompt",
    "load_rubric",
    "load_suite",
    "sandbox_source",
    "select",
    "server_catalog",
    "servers_for",
    "suite_path",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("mcp_farm.scenarios.catalog"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
