"""Running `state:` probes: what a server's state holds, read by the farm where the model never
sees it (a read call, a hidden snapshot, a file or folder in the sandbox, read-only SQL).

Each probe gives the value it found and the matcher judges it (workers/state.py). A probe
that cannot look (its server refuses the read call or reports a failure as text by its
`error_pattern`, a result that is not JSON or has no structured content where the probe reads
it so, a SQLite file not in the sandbox, a hidden tool the server does not offer, a server
served from its cassette) is the scenario's or the server's failure, never the model's:
InfraError naming the probe. Suites are checked for the last when they load (scenarios/catalog.py);
the check here holds for a trial built any other way.
"""

from __future__ import annotations

import difflib
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
from mcp_farm.schema.expect import SetBack
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.connections import Connected, result_text
from mcp_farm.workers.model.safejson import UnreadableJson, loads
from mcp_farm.workers.state import judged

NOTHING = object()
"""A file probe that could not read a value: a file that is not UTF-8 text (which the model's
writes may have made; a read call that gives no JSON or no structured content where the probe
asks for it is the scenario's fault: InfraError)."""


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
            if found is None:
                raise InfraError(
                    f"state probe {probe.name}: {server}.{probe.tool} gave no structured "
                    "content to read (`read: structured`; use `read: text` or `json`)"
                )
            return found
        text = result_text(result)
        if probe.read == "json":
            return _json(text, f"state probe {probe.name}: {server}.{probe.tool}")
        return text
    if probe.snapshot:
        return await snapshot(conn, server, probe.name)
    sandbox = _sandbox(conn, server, probe.name)
    if probe.file is not None:
        return _file_value(sandbox / probe.file)
    assert probe.sqlite is not None and probe.query is not None
    return _rows(sandbox, probe.sqlite, probe.query, probe.name, server)


async def snapshot(conn: Connected, server: str, label: str) -> Any:
    """The server's state as its hidden `farm_snapshot` gives it, decoded."""
    if SNAPSHOT_TOOL not in conn.control.get(server, set()):
        raise InfraError(
            f"state probe {label}: server {server} offers no hidden `{SNAPSHOT_TOOL}` "
            "(only the farm's own fixture servers do; use a read call)"
        )
    result = await _call(conn, server, SNAPSHOT_TOOL, {}, label)
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        return structured
    return _json(result_text(result), f"state probe {label}: {server}.{SNAPSHOT_TOOL}")


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
    text = result_text(result)
    if result.is_error or conn.reported_error(server, text):
        # A server that reports failures as text (its `error_pattern`) fails here too: the
        # text it gave is no reading of the state.
        raise InfraError(f"state probe {label}: {server}.{tool} failed: {text[:300]}")
    return result


def _json(text: str, what: str) -> Any:
    """`text` decoded as JSON; InfraError naming `what` gave it when it is not JSON (the
    probe asked for JSON of a result that is not: the scenario's or the server's fault)."""
    try:
        return loads(text)
    except UnreadableJson:
        shown = text if len(text) <= 120 else text[:117] + "…"
        raise InfraError(f"{what} did not answer JSON (`read: json`): {shown!r}") from None


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


def _rows(sandbox: Path, name: str, query: str, label: str, server: str) -> Any:
    """The rows of one SELECT on a SQLite file opened read-only (`mode=ro`: the probe can never
    change what it looks at). InfraError when the file is not there: a query has no rows to
    give of a database that does not exist, and a name written wrong would otherwise find
    `null` and blame the model (a probe that checks a file is gone uses `file:`)."""
    path = sandbox / name
    if not path.is_file():
        raise InfraError(f"state probe {label}: {_missing(sandbox, name, server)}")
    try:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as db:
            return [list(row) for row in db.execute(query).fetchall()]
    except sqlite3.Error as exc:
        raise InfraError(f"state probe {label}: the query failed: {exc}") from None


def _missing(sandbox: Path, name: str, server: str) -> str:
    """Says a SQLite file is not in a server's sandbox, with the names close to it there."""
    folder = (sandbox / name).parent
    try:
        there = [p.name for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []
    except OSError:
        there = []
    close = difflib.get_close_matches(Path(name).name, there, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    return f"no SQLite file {name!r} in server {server}'s sandbox{hint}"


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

    async def put_back(self, conn: Connected, called: set[str]) -> dict[str, SetBack]:
        """Set every server back to what `save` kept, or none: when a server the model called
        since (`called`) has no way back (no hidden restore, no sandbox), setting the others
        back would undo the model's writes there while its writes on that one stay, and the
        expected turn would be neither the model's nor the farm's. What was done, per server
        (SetBack)."""
        done: dict[str, SetBack] = {}
        for server in sorted(conn.sessions):
            if server not in self.documents and server not in self.folders:
                done[server] = "cannot" if server in called else "untouched"
        if "cannot" in done.values():
            return done | {s: "left" for s in sorted(conn.sessions) if s not in done}
        for server, document in self.documents.items():
            await restore(conn, server, document)
            done[server] = "restored"
        for server, kept in self.folders.items():
            await anyio.to_thread.run_sync(_copy, kept, conn.sandboxes[server])
            done[server] = "copied_back"
        return dict(sorted(done.items()))

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
