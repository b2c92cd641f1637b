"""Agents to run as the system under test (docs/agents.md): each a standalone program that reads
the trial's `mcpServers` config file, as any MCP client would."""
