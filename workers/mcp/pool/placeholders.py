"""A server's command, environment and URL with its placeholders filled in, and the key an idle server is found by."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mcp_farm.scenarios import (
    FIXTURES_DIR,
    sandbox_source,
)
from mcp_farm.schema import (
    ENV_PLACEHOLDER,
    ServerDef,
    absolute_folder,
    fill_placeholders,
    remember_secret,
)
from mcp_farm.schema.redact import MASK, MASK_MIN_CHARS
from mcp_farm.workers.errors import InfraError

REPO_ROOT = FIXTURES_DIR.parents[1]
"""Where `{root}` points: the folder that holds the `scenarios` package (a checkout's root),
so a command can name a project-local install such as `.tools/` whatever the working folder."""


def _expand(
    arg: str,
    sandbox: Path | None,
    attached: list[str],
    port: int | None = None,
    sandboxes: Path | None = None,
) -> str:
    # Every path a server is handed is absolute: a server resolves a relative one against its
    # own working or install folder (npm's server-memory writes under node_modules/ then).
    values = {
        "python": sys.executable,
        "root": str(REPO_ROOT),
        "sandbox": str(absolute_folder(sandbox)) if sandbox else "",
        "attached": ",".join(attached),
    }
    # Left as written when not given: `_key` builds keys from the definition as written.
    if port is not None:
        values["port"] = str(port)
    if sandboxes is not None:
        values["sandboxes"] = str(absolute_folder(sandboxes))
    return fill_placeholders(arg, values)


@dataclass(frozen=True)
class Launch:
    """How to start one server, every placeholder filled in. It may hold values from the
    worker's environment (`{env:VAR}`), so it is never stored, logged or used as a key."""

    argv: list[str]
    env: dict[str, str]
    url: str | None
    secrets: tuple[str, ...] = ()
    """The values taken from the environment, masked in any message about this server."""
    headers: dict[str, str] = field(default_factory=dict)
    """HTTP headers of the session (a session on a shared process names its sandbox here)."""

    def masked(self, text: str) -> str:
        for value in self.secrets:
            if len(value) >= MASK_MIN_CHARS:
                text = text.replace(value, MASK)
        return text


class _Filler:
    """Fills one server's placeholders, remembering the values taken from the environment."""

    def __init__(self, server: ServerDef, environ: Mapping[str, str]) -> None:
        self.server, self.environ = server, environ
        self.taken: list[str] = []

    def __call__(
        self,
        text: str,
        sandbox: Path | None,
        attached: list[str],
        port: int | None = None,
        sandboxes: Path | None = None,
    ) -> str:
        return ENV_PLACEHOLDER.sub(self._value, _expand(text, sandbox, attached, port, sandboxes))

    def _value(self, match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in self.environ:
            raise InfraError(
                f"MCP server {self.server.name!r} needs the environment variable {name} "
                f"(`{{env:{name}}}` in its definition), which is not set on this worker"
            )
        self.taken.append(self.environ[name])
        remember_secret(self.environ[name])
        return self.environ[name]


def launch(
    server: ServerDef, sandbox: Path | None, attached: list[str], environ: Mapping[str, str]
) -> Launch:
    """The server's command, environment and URL with placeholders filled in; InfraError
    naming the server and the variable when `{env:VAR}` names one the worker does not have."""
    fill = _Filler(server, environ)
    argv = [fill(a, sandbox, attached) for a in server.command or []]
    env = {k: fill(v, sandbox, attached) for k, v in server.env.items()}
    url = fill(server.url, sandbox, attached) if server.url else None
    return Launch(argv, env, url, tuple(fill.taken))


def shared_launch(
    server: ServerDef,
    sandbox: Path | None,
    attached: list[str],
    environ: Mapping[str, str],
    port: int,
    sandboxes: Path,
) -> tuple[Launch, Launch]:
    """For a server with a `shared:` launch: how to start its process on `port` (`{sandboxes}`:
    the folder every trial's sandbox lies in), and how one trial's session reaches it (its URL
    and headers, `{sandbox}` and `{attached}` filled in)."""
    assert server.shared is not None
    fill = _Filler(server, environ)
    argv = [fill(a, None, attached, port, sandboxes) for a in server.shared.command]
    env = {k: fill(v, None, attached, port) for k, v in server.env.items()}
    url = fill(server.shared.url, None, attached, port)
    headers = {k: fill(v, sandbox, attached, port) for k, v in server.shared.headers.items()}
    secrets = tuple(fill.taken)
    return Launch(argv, env, None, secrets), Launch([], {}, url, secrets, headers)


def _key(server: ServerDef, attached: list[str]) -> str:
    # Built from the definition as written: `{env:VAR}` stays a placeholder, so no value
    # from the environment is ever part of a key. The sandbox's source is part of it: two
    # suites may define a server of one name and command on different folders, and a server
    # lent clean keeps the folder it was last given.
    command = [_expand(a, None, attached) for a in server.command or []]
    source = sandbox_source(server)
    return json.dumps(
        [server.name, command, server.url, server.env, server.protocol, str(source or "")],
        sort_keys=True,
    )
