"""MCP servers kept running between trials, with their state reset per trial.

Starting a stdio server costs about half a second; a call on a live session about a
millisecond. So each worker process keeps the servers it has started, lends one to a trial at
a time, and before lending it again resets its sandbox folder in place (the server reads the
folder on every call). A server that failed, hung or belongs to a trial that ended badly is
stopped, not lent again; a server declared `reuse: false` is started fresh for every trial, and
one declared `reset: session` gets a new MCP session for every trial (over HTTP a new connection
and session to the same server; over stdio, where the process is the session, a new process).

The pool lends (`lending`), fills each server's command in (`placeholders`), opens sessions
(`session`) and hears their tool-list changes (`changes`).
"""

from mcp_farm.workers.mcp.pool.changes import ListChanges
from mcp_farm.workers.mcp.pool.lending import LiveServer, ServerPool, reset_sandbox, start_failure
from mcp_farm.workers.mcp.pool.placeholders import (
    REPO_ROOT,
    Launch,
    launch,
    shared_launch,
)

# Two helpers the tests check on their own, importable here as before the split.
from mcp_farm.workers.mcp.pool.placeholders import _expand as _expand
from mcp_farm.workers.mcp.pool.placeholders import _key as _key

__all__ = [
    "REPO_ROOT",
    "Launch",
    "ListChanges",
    "LiveServer",
    "ServerPool",
    "launch",
    "reset_sandbox",
    "shared_launch",
    "start_failure",
]
