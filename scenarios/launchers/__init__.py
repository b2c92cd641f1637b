"""Wrappers that prepare a fixture in a trial's sandbox and then become a third-party MCP server
(exec). They are not servers themselves, take the program and the sandbox as arguments, and use
only the standard library so they run by path without importing the farm."""
