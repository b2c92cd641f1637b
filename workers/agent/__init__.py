"""Bring your own agent: any MCP client run as the system under test, its calls recorded by the
farm's proxy in front of the trial's servers (docs/agents.md)."""

from mcp_farm.workers.agent.client import AgentClient, agent_session

__all__ = ["AgentClient", "agent_session"]
