"""The MCP tool-calling evaluation farm, under one import root.

The repository keeps its four packages as top-level folders (`schema/`, `scenarios/`,
`scheduler/`, `workers/`); this folder links them under one name, so the installed farm owns only
`mcp_farm` and never overwrites another distribution's top-level package. See
docs/architecture.md for what each package does and how they may depend on each other.
"""

__all__ = ["scenarios", "scheduler", "schema", "workers"]
