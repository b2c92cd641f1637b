"""Running `state:` probes: what a server's state holds, read by the farm where the model never
sees it (a read call, a hidden snapshot, a file or folder in the sandbox, read-only SQL).

Each probe gives the value it found and the matcher judges it (workers/grading/state.py). A
probe that cannot look (its server refuses the read call, a hidden tool the server does not
offer, a server served from its cassette) is the scenario's or the server's failure, never
the model's: InfraError. Suites are checked for the last when they load (scenarios/catalog.py);
the check here holds for a trial built any other way.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import MCPError

from mcp_farm.scenarios.cassette import probe_refusal
from mcp_farm.schema import (
    RESTORE_TOOL,
    SNAPSHOT_TOOL,
    ProbeResult,
    StateProbe,
)
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.connections import Connected, result_text
from mcp_farm.workers.model.safejson import UnreadableJson, loads
from mcp_farm.workers.state import judged

NOTHING = object()
"""A probe that could not read a value (a file that is not text, a result that is not JSON)."""


def probe_server(probe: StateProbe, conn: Connected) -> str:
    """The attached server a probe looks at; InfraError when it names none and several fit."""
    if probe.server is not None:
        if probe.server not in conn.sessions:
            raise InfraError(f"state probe {probe.name}: server {probe.server!r} is not attached")
        return probe.server
    if probe.tool is not None:
        owners = sorted({t.server for t in conn.tools.values() if t.tool == probe.tool})
        owners += sorted(s for s, tools in conn.control.items() if probe.tool in tools)
        if len(set(owners)) == 1:
            return owners[0]
    if len(conn.sessions) == 1:
        return next(iter(conn.sessions))
    raise InfraError(f"state probe {probe.name}: name its `server` (several are attached)")


async def read_value(probe: StateProbe, conn: Connected) -> Any:
    """The value a probe finds (before `at`); NOTHING where it cannot be read as asked."""
    server = probe_server(probe, conn)
    defined = conn.servers.get(server)
    if defined is not None and defined.replay is not None:
        raise InfraError(f"state probe {probe.name}: {probe_refusal(server, probe.kind)}")
    if probe.tool is not None:
        result = await _call(conn, server, probe.tool, probe.arguments, probe.name)
        if probe.read == "structured":
            found = getattr(result, "structured_content", None)
            return NOTHING if found is None else found
        text = result_text(result)
        return _json(text) if probe.read == "json" else text
    if probe.snapshot:
        return await snapshot(conn, server, probe.name)
    sandbox = _sandbox(conn, server, probe.name)
    if probe.file is not None:
        return _file_value(sandbox / probe.file)
    assert probe.sqlite is not None and probe.query is not None
    return _rows(sandbox / probe.sqlite, probe.query, probe.name)


async def snapshot(conn: Connected, server: str, label: str) -> Any:
    """The server's state as its hidden `farm_snapshot` gives it, decoded."""
    if SNAPSHOT_TOOL not in conn.control.get(server, set()):
        raise InfraError(
            f"state probe {label}: server {server} offers no hidden `{SNAPSHOT_TOOL}` "
            "(only the farm's own fixture servers do; use a read call)"
        )
    result = await _call(conn, server, SNAPSHOT_TOOL, {}, label)
    structured = getattr(result, "structured_content", None)
    return structured if structured is not None else _json(result_text(result))


def can_restore(conn: Connected, server: str) -> bool:
    """Whether the farm can set a server's state back: a hidden snapshot and restore pair, or
    a sandbox folder it can copy back (a fixture server reads its files afresh)."""
    hidden = conn.control.get(server, set())
    return {SNAPSHOT_TOOL, RESTORE_TOOL} <= hidden


async def restore(conn: Connected, server: str, state: Any) -> None:
    """Put a server back to a document its `farm_snapshot` gave; InfraError when it refuses."""
    await _call(conn, server, RESTORE_TOOL, {"state": state}, f"restore of {server}")


async def _call(
    conn: Connected, server: str, tool: str, arguments: dict[str, Any], label: str
) -> Any:
    conn.touched.add(server)  # a read call may still change a server that misbehaves
    # Not captured: a cassette answers the model, and this read of the state after the writes
    # would be served to a model that reads before writing (the n-th identical call gets the
    # n-th answer). Probes never look at a cassette (scenarios/cassette/launch.py).
    try:
        result = await conn.call(server, tool, arguments)
    except MCPError as exc:
        raise InfraError(f"state probe {label}: {server}.{tool} refused: {exc}") from None
    if result.is_error:
        raise InfraError(
            f"state probe {label}: {server}.{tool} failed: {result_text(result)[:300]}"
        )
    return result


def _json(text: str) -> Any:
    try:
        return loads(text)
    except UnreadableJson:
        return NOTHING


def _sandbox(conn: Connected, server: str, label: str) -> Path:
    found = conn.sandboxes.get(server)
    if found is None:
        raise InfraError(f"state probe {label}: server {server} has no sandbox on this worker")
    return found


def _file_value(path: Path) -> Any:
    """A file's text, a folder's sorted entry names (folders with `/`), None when absent."""
    if path.is_dir():
        return sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
    if not path.exists():
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return NOTHING


def _rows(path: Path, query: str, label: str) -> Any:
    """The rows of one SELECT on a SQLite file opened read-only (`mode=ro`: the probe can never
    change what it looks at); None when the file is absent."""
    if not path.is_file():
        return None
    try:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as db:
            return [list(row) for row in db.execute(query).fetchall()]
    except sqlite3.Error as exc:
        raise InfraError(f"state probe {label}: the query failed: {exc}") from None


async def run_probes(
    probes: Sequence[StateProbe], conn: Connected, turn: int | None
) -> list[ProbeResult]:
    """Run each probe and judge what it found (in order; the model sees none of it)."""
    results = []
    for probe in probes:
        value = await read_value(probe, conn)
        results.append(judged(probe, value, turn, readable=value is not NOTHING))
    return results


@dataclass
class Saved:
    """The servers' states before a conversation's turn, so `continue` can set a failed turn
    back (docs/state.md): a hidden snapshot document per fixture server that offers one, a
    copy of the sandbox folder for a sandboxed server that does not."""

    documents: dict[str, Any] = field(default_factory=dict)
    folders: dict[str, Path] = field(default_factory=dict)
    scratch: Path | None = None

    async def save(self, conn: Connected) -> None:
        """Keep every attached server's state as it is now (replacing what was kept)."""
        self.close()
        self.documents.clear()
        self.folders.clear()
        for server in conn.sessions:
            if can_restore(conn, server):
                self.documents[server] = await snapshot(conn, server, f"save of {server}")
            elif server in conn.sandboxes:
                if self.scratch is None:
                    self.scratch = Path(tempfile.mkdtemp(prefix="farm-turn-"))
                kept = self.scratch / server
                await anyio.to_thread.run_sync(_copy, conn.sandboxes[server], kept)
                self.folders[server] = kept

    async def put_back(self, conn: Connected) -> list[str]:
        """Set every server back to what `save` kept; the servers it could not (no hidden
        restore, no sandbox), by name."""
        for server, document in self.documents.items():
            await restore(conn, server, document)
        for server, kept in self.folders.items():
            await anyio.to_thread.run_sync(_copy, kept, conn.sandboxes[server])
        return sorted(set(conn.sessions) - set(self.documents) - set(self.folders))

    def close(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


def _copy(source: Path, target: Path) -> None:
    """Make `target` hold what `source` holds, in place (a server holds the folder open)."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in target.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
