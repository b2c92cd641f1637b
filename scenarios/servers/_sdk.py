"""The one place the MCP server class is imported (the SDK renamed it between 1.x and 2.x)."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

__all__ = ["FIXTURES", "MCPServer", "ToolError", "add_root", "serve"]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def add_root(parser: argparse.ArgumentParser, fixture: str, help: str) -> None:
    """Add `--root`, the folder a server keeps its state in, defaulting to a scratch copy.

    The farm always passes a fresh sandbox. Someone trying a server by hand
    (`python -m scenarios.servers.notes --transport http`) gets a temporary copy of
    `scenarios/fixtures/<fixture>` instead, removed when the server stops, so trying the
    write tools never edits the fixture every trial starts from.
    """
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help=f"{help}; default: a temporary copy of scenarios/fixtures/{fixture}",
    )
    parser.set_defaults(root_fixture=fixture)


@contextmanager
def _scratch_copy(fixture: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=f"farm-{fixture.replace('/', '-')}-") as tmp:
        root = Path(tmp) / "root"
        shutil.copytree(FIXTURES / fixture, root)
        # stderr: on stdio, stdout is the protocol stream.
        print(
            f"no --root given: serving a temporary copy of scenarios/fixtures/{fixture} "
            f"at {root} (removed when the server stops)",
            file=sys.stderr,
            flush=True,
        )
        yield root


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def serve(
    build: Callable[[argparse.Namespace], MCPServer],
    argv: list[str] | None = None,
    add_args: Callable[[argparse.ArgumentParser], None] | None = None,
) -> None:
    """Parse the common `--transport/--host/--port` options and run the server."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    if add_args:
        add_args(parser)
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        fixture = getattr(args, "root_fixture", None)
        if fixture and args.root is None:
            args.root = stack.enter_context(_scratch_copy(fixture))
            # A plain SIGTERM would end the process without unwinding, leaving the copy behind
            # (uvicorn re-raises it after its own shutdown); exiting through Python removes it.
            signal.signal(signal.SIGTERM, _exit_on_signal)
        server = build(args)
        if args.transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=args.host, port=args.port)
