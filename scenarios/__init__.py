"""What is tested against: suites, prompt configs, example sweeps, fixture MCP servers."""

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
