"""MCP servers as a trial sees them: the warm per-process pool, shared server processes, and a trial's connections."""
