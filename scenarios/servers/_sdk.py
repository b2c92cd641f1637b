"""The one place the MCP server class is imported (the SDK renamed it between 1.x and 2.x)."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

from mcp_farm.schema.vocab import CONTROL_META, RESTORE_TOOL, SNAPSHOT_TOOL

__all__ = [
    "CONTROL",
    "FIXTURES",
    "ROOT_HEADER",
    "Context",
    "Elicit",
    "ElicitationResult",
    "MCPServer",
    "Resolve",
    "ToolError",
    "add_control",
    "add_root",
    "serve",
    "session_root",
]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ROOT_HEADER = "x-farm-root"
"""The header naming a session's own state folder, on a server shared over HTTP."""

_session_root: ContextVar[Path | None] = ContextVar("farm_session_root", default=None)


def session_root(default: Path) -> Path:
    """The folder this request's state lives in: its session's own folder on a server started
    with `--session-roots` (one process shared by many trials), else `default` (`--root`)."""
    return _session_root.get() or default


class SessionRoots:
    """Server middleware: each request works in the folder its session names in X-Farm-Root.

    The folder must lie inside `parent` (the one `--session-roots` allows) and exist; anything
    else is refused with a protocol error, so a session can never reach another's state or a
    folder outside the farm's.
    """

    def __init__(self, parent: Path) -> None:
        self.parent = parent.resolve()

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        headers = getattr(ctx.request, "headers", None)
        named = headers.get(ROOT_HEADER) if headers is not None else None
        if not named:
            return await call_next(ctx)
        root = Path(named).resolve()
        if not root.is_relative_to(self.parent) or root == self.parent or not root.is_dir():
            raise MCPError(
                code=-32602, message=f"{ROOT_HEADER} must name a folder inside {self.parent}"
            )
        token = _session_root.set(root)
        try:
            return await call_next(ctx)
        finally:
            _session_root.reset(token)


CONTROL = {CONTROL_META: True}
"""The `_meta` of a tool only the farm calls; the farm never lists it to a model."""


def add_control(
    server: MCPServer,
    snapshot: Callable[[], dict[str, Any]],
    restore: Callable[[dict[str, Any]], None],
) -> None:
    """Give a fixture server its hidden control channel (docs/state.md): `farm_snapshot`, its
    state as a JSON document for `state:` probes, and `farm_restore`, which puts back a
    document `farm_snapshot` gave (how `continue` sets a failed turn's state back)."""

    def farm_snapshot() -> dict[str, Any]:
        """The server's state as a document (for the farm's state probes, never a model)."""
        return snapshot()

    def farm_restore(state: dict[str, Any]) -> str:
        """Put back a state `farm_snapshot` gave (for the farm, never a model)."""
        restore(state)
        return "restored"

    server.add_tool(farm_snapshot, name=SNAPSHOT_TOOL, meta=CONTROL)
    server.add_tool(farm_restore, name=RESTORE_TOOL, meta=CONTROL)


def add_root(parser: argparse.ArgumentParser, fixture: str, help: str) -> None:
    """Add `--root`, the folder a server keeps its state in, defaulting to a scratch copy.

    The farm always passes a fresh sandbox. Someone trying a server by hand
    (`python -m mcp_farm.scenarios.servers.notes --transport http`) gets a temporary copy of
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


def _exit_when_stdin_closes() -> None:
    """The farm holds this server's stdin open; when the worker that started it dies (even by
    SIGKILL), the pipe closes and the server stops the way SIGTERM stops it."""
    while sys.stdin.buffer.read(4096):
        pass
    os.kill(os.getpid(), signal.SIGTERM)


STOP_GRACE_S = 2
"""Over http, how long a stopping server lets open requests finish before it ends them. A
client at 2026-07-28 holds a `subscriptions/listen` stream open for as long as its session
lasts; without a bound, SIGTERM or Ctrl-C would wait for that client to leave."""


def _serve_http(server: MCPServer, host: str, port: int, json_response: bool) -> None:
    """What `server.run("streamable-http")` does, with a bounded stop (`STOP_GRACE_S`)."""
    import anyio
    import uvicorn

    app = server.streamable_http_app(json_response=json_response, host=host)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=server.settings.log_level.lower(),
        timeout_graceful_shutdown=STOP_GRACE_S,
    )
    anyio.run(uvicorn.Server(config).serve)


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
    if parser.get_default("root_fixture"):
        parser.add_argument(
            "--session-roots",
            type=Path,
            default=None,
            help="over http: serve many sessions at once, each in the folder its "
            f"{ROOT_HEADER} header names inside this one (how the farm shares one process)",
        )
    parser.add_argument(
        "--shared",
        action="store_true",
        help="over http, tuned for many sessions at once (how the farm shares one process): "
        "warnings-only log, plain JSON replies, and exit when standard input closes",
    )
    args = parser.parse_args(argv)
    if getattr(args, "session_roots", None) is not None and args.transport != "http":
        parser.error("--session-roots needs --transport http (stdio has one session)")
    if args.shared and args.transport != "http":
        parser.error("--shared needs --transport http (stdio has one session)")
    with ExitStack() as stack:
        fixture = getattr(args, "root_fixture", None)
        if fixture and args.root is None:
            args.root = stack.enter_context(_scratch_copy(fixture))
            # A plain SIGTERM would end the process without unwinding, leaving the copy behind
            # (uvicorn re-raises it after its own shutdown); exiting through Python removes it.
            signal.signal(signal.SIGTERM, _exit_on_signal)
        server = build(args)
        if getattr(args, "session_roots", None) is not None:
            server.middleware.append(SessionRoots(args.session_roots))
        if args.shared:
            # One process serves every trial in flight: a log line per request would cost it
            # more than the request, and plain JSON replies spare each call an event stream
            # (measured: 8 ms a call with both, 2.5 ms without).
            server.settings.log_level = "WARNING"
            threading.Thread(target=_exit_when_stdin_closes, daemon=True).start()
        if args.transport == "stdio":
            server.run("stdio")
        else:
            _serve_http(server, args.host, args.port, json_response=args.shared)
