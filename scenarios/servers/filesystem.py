"""A sandboxed filesystem: the agent sees one folder as its home, and nothing outside it.

The farm copies a fixture tree into a fresh folder for every trial and starts this server
on it, so no trial sees another's writes. Besides the tools a person would expect, the
server offers a few near-miss tools (`list_files_recursive`, `read_file_metadata`,
`find_in_files`) whose names sound right but whose behaviour does not fit the everyday
requests of the suites, so choosing a tool is a real test.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from mcp.types import ToolAnnotations

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    add_root,
    serve,
    session_root,
)

# Tools that only read are marked so: the farm resets a warm server's sandbox only after a
# trial that called something else.
READ_ONLY = ToolAnnotations(read_only_hint=True)
MAX_HITS = 50
"""Content-search lines returned at most, so one broad query cannot flood the context."""
PUNCTUATION = re.compile(r"[^\w\s]")


def _squash(text: str) -> str:
    """Lower-case without punctuation, so "wifi" finds "Wi-Fi" as a person would expect."""
    return " ".join(PUNCTUATION.sub("", text.lower()).split())


class Sandbox:
    """Maps the agent's paths (`/Desktop`, `~/Desktop`, `Desktop`) onto one root folder."""

    def __init__(self, root: Path) -> None:
        self._root = root.resolve()

    @property
    def root(self) -> Path:
        return session_root(self._root)

    def resolve(self, path: str) -> Path:
        text = (path or "").strip().replace("\\", "/")
        if text.startswith("~"):
            text = text[1:]
        rel = PurePosixPath("/" + text.lstrip("/"))
        parts = [p for p in rel.parts[1:] if p not in ("", ".")]
        if ".." in parts:
            raise ToolError(f"path {path!r} leaves the home folder")
        return self.root.joinpath(*parts)

    def show(self, real: Path) -> str:
        rel = real.relative_to(self.root).as_posix()
        return "/" if rel == "." else "/" + rel

    def existing(self, path: str) -> Path:
        real = self.resolve(path)
        if not real.exists():
            raise ToolError(f"no such file or folder: {path}")
        return real

    def folder(self, path: str) -> Path:
        real = self.existing(path)
        if not real.is_dir():
            raise ToolError(f"not a folder: {path}")
        return real

    def files_under(self, base: Path) -> Iterator[Path]:
        """Every file below `base`, in a stable order."""
        for folder, dirs, files in os.walk(base):
            dirs.sort()
            for name in sorted(files):
                yield Path(folder) / name

    def destination(self, source: Path, target: str) -> Path:
        """Where a move or copy lands: inside `target` when it is a folder, else `target`."""
        real = self.resolve(target)
        if real.is_dir():
            real = real / source.name
        if real.exists():
            raise ToolError(f"{self.show(real)} already exists; choose another name")
        if not real.parent.is_dir():
            raise ToolError(f"folder does not exist: {self.show(real.parent)}")
        if real == self.root or source in real.parents:
            raise ToolError(f"cannot put {self.show(source)} inside itself")
        return real


def _front_matter(text: str) -> list[str]:
    """The `key: value` lines of a leading `---` block, if the text has one."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return []
    for end, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return [item for item in lines[1:end] if ":" in item]
    return []


def build(root: Path) -> MCPServer:
    box = Sandbox(root)
    server = MCPServer("filesystem", instructions="Files in the user's home folder.")

    @server.tool(annotations=READ_ONLY)
    def list_directory(path: str = "/") -> str:
        """List the files and folders in a folder of the user's home (e.g. "/Desktop").

        Folders end with "/". Sizes are in bytes.
        """
        real = box.folder(path)
        lines = []
        for entry in sorted(real.iterdir(), key=lambda p: p.name.lower()):
            if entry.is_dir():
                lines.append(f"{entry.name}/")
            else:
                lines.append(f"{entry.name}\t{entry.stat().st_size} bytes")
        return "\n".join(lines) if lines else "(empty folder)"

    @server.tool(annotations=READ_ONLY)
    def read_file(path: str) -> str:
        """Read a text file from the user's home and return its contents."""
        real = box.existing(path)
        if real.is_dir():
            raise ToolError(f"{path} is a folder; use list_directory")
        return real.read_text(encoding="utf-8", errors="replace")

    @server.tool()
    def write_file(path: str, content: str) -> str:
        """Create or overwrite a text file in the user's home with the given content."""
        real = box.resolve(path)
        if not real.parent.is_dir():
            raise ToolError(f"folder does not exist: {box.show(real.parent)}")
        if real.is_dir():
            raise ToolError(f"{path} is a folder")
        real.write_text(content, encoding="utf-8")
        return f"wrote {len(content.encode('utf-8'))} bytes to {box.show(real)}"

    @server.tool(annotations=READ_ONLY)
    def search_files(pattern: str, path: str = "/") -> str:
        """Find files whose name matches a pattern (e.g. "*.pdf" or "budget"), in a folder and below."""
        base = box.existing(path)
        glob = pattern if any(c in pattern for c in "*?[") else f"*{pattern}*"
        hits = [
            box.show(file)
            for file in box.files_under(base)
            if fnmatch.fnmatch(file.name.lower(), glob.lower())
        ]
        return "\n".join(sorted(hits)) if hits else "no files match"

    @server.tool(annotations=READ_ONLY)
    def search_file_contents(query: str, path: str = "/") -> str:
        """Find the lines inside files that mention some text, in a folder and all its subfolders.

        Matching ignores case and punctuation; a line matches when it contains every word of
        the query.
        Each hit is shown as "/path/to/file:line number: the line".
        """
        words = _squash(query).split()
        if not words:
            raise ToolError("the query has no words to search for")
        hits = []
        for file in box.files_under(box.existing(path)):
            text = file.read_text(encoding="utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), start=1):
                squashed = _squash(line)
                if all(w in squashed for w in words):
                    hits.append(f"{box.show(file)}:{number}: {line.strip()}")
        if not hits:
            return f"no file mentions {query!r}"
        more = len(hits) - MAX_HITS
        shown = hits[:MAX_HITS] + ([f"... and {more} more lines"] if more > 0 else [])
        return "\n".join(shown)

    @server.tool(annotations=READ_ONLY)
    def get_file_info(path: str) -> str:
        """Size, type and modification time of a file or folder in the user's home."""
        real = box.existing(path)
        stat = real.stat()
        kind = "folder" if real.is_dir() else "file"
        modified = datetime.fromtimestamp(stat.st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC")
        return f"{box.show(real)}: {kind}, {stat.st_size} bytes, modified {modified}"

    @server.tool()
    def move_file(source: str, destination: str) -> str:
        """Move or rename a file or folder. When `destination` is an existing folder, the item
        goes inside it with its name unchanged. Never overwrites."""
        real = box.existing(source)
        if real == box.root:
            raise ToolError("cannot move the home folder itself")
        target = box.destination(real, destination)
        shutil.move(real, target)
        return f"moved {box.show(real)} to {box.show(target)}"

    @server.tool()
    def copy_file(source: str, destination: str) -> str:
        """Copy a file (or a whole folder). When `destination` is an existing folder, the copy
        goes inside it with the same name. Never overwrites."""
        real = box.existing(source)
        target = box.destination(real, destination)
        if real.is_dir():
            shutil.copytree(real, target)
        else:
            shutil.copy2(real, target)
        return f"copied {box.show(real)} to {box.show(target)}"

    @server.tool()
    def create_directory(path: str) -> str:
        """Create a folder in the user's home, including any missing parent folders."""
        real = box.resolve(path)
        if real.is_dir():
            return f"{box.show(real)} already exists"
        if real.exists():
            raise ToolError(f"{path} exists and is a file")
        real.mkdir(parents=True)
        return f"created {box.show(real)}"

    # ---- near misses: plausible names, behaviour that does not fit everyday requests

    @server.tool(annotations=READ_ONLY)
    def list_files_recursive(path: str = "/") -> str:
        """List the names of every file below a folder, subfolders included, as relative paths.

        Names only: no folders, sizes or dates.
        """
        base = box.folder(path)
        names = [file.relative_to(base).as_posix() for file in box.files_under(base)]
        return "\n".join(names) if names else "(no files)"

    @server.tool(annotations=READ_ONLY)
    def read_file_metadata(path: str) -> str:
        """Read the metadata a document declares about itself (title, author, tags) from its
        front-matter header. Does not report size or dates, nor the document's body."""
        real = box.existing(path)
        if real.is_dir():
            raise ToolError(f"{path} is a folder")
        fields = _front_matter(real.read_text(encoding="utf-8", errors="replace"))
        return "\n".join(fields) if fields else f"{box.show(real)} declares no metadata"

    @server.tool(annotations=READ_ONLY)
    def find_in_files(text: str, path: str = "/") -> str:
        """Count the exact, case-sensitive occurrences of some text in each file directly
        inside one folder (subfolders are not searched). Returns counts, not lines."""
        base = box.folder(path)
        counts = []
        for entry in sorted(base.iterdir()):
            if entry.is_file():
                found = entry.read_text(encoding="utf-8", errors="replace").count(text)
                if found:
                    counts.append(f"{entry.name}: {found}")
        return "\n".join(counts) if counts else "0 occurrences"

    return server


def _args(parser: argparse.ArgumentParser) -> None:
    add_root(parser, "home", "the folder shown as home")


if __name__ == "__main__":
    serve(lambda a: build(a.root), add_args=_args)
