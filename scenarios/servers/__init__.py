"""Fixture MCP servers written with the official SDK. Each runs over stdio or streamable HTTP."""
