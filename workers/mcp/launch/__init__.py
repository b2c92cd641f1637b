"""Starting Python MCP servers as forks of a warm interpreter: the relay, the zygote, and which servers qualify."""

from mcp_farm.workers.mcp.launch.prefork import relay_cpu, relayed, started_as

__all__ = ["relay_cpu", "relayed", "started_as"]
