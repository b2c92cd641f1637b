"""Test-only MCP server that tells how its process was started: command line, working folder,
environment, import path and main module, open files, and its parent; `--exit N` exits before serving,
`--spin S` works the CPU for S seconds before serving, and a SIGTERM is written down in the file `--on-term` names before the server ends."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    serve,
)


def build() -> MCPServer:
    server = MCPServer("whoami")

    @server.tool()
    def whoami() -> str:
        """How this process was started, as JSON."""
        return json.dumps(
            {
                "argv": sys.argv[1:],
                "cwd": os.getcwd(),
                "env": os.environ.get("WHOAMI_VALUE"),
                "home": os.environ.get("HOME"),
                "path0": sys.path[0],
                "main": sys.modules["__main__"].__file__,
                "parent": os.getppid(),
                "pid": os.getpid(),
                "stdin_tty": sys.stdin.isatty(),
                "open_files": len(os.listdir("/proc/self/fd")),
            }
        )

    return server


def _on_term(path: str) -> None:
    def handler(signum: int, _frame: object) -> None:
        Path(path).write_text(f"signal {signum}")
        sys.exit(0)

    signal.signal(signal.SIGTERM, handler)


if __name__ == "__main__":
    if "--exit" in sys.argv:
        sys.exit(int(sys.argv[sys.argv.index("--exit") + 1]))
    if "--spin" in sys.argv:
        until = time.process_time() + float(sys.argv[sys.argv.index("--spin") + 1])
        while time.process_time() < until:
            pass
    if "--on-term" in sys.argv:
        _on_term(sys.argv.pop(sys.argv.index("--on-term") + 1))
        sys.argv.remove("--on-term")
    serve(lambda _a: build(), argv=[])
