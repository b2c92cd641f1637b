"""A sandboxed filesystem: the agent sees one folder as its home, and nothing outside it.

The farm copies a fixture tree into a fresh folder for every trial and starts this server
on it, so no trial sees another's writes.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from mcp.types import ToolAnnotations

from scenarios.servers._sdk import MCPServer, ToolError, serve

# Tools that only read are marked so: the farm resets a warm server's sandbox only after a
# trial that called something else.
READ_ONLY = ToolAnnotations(read_only_hint=True)


class Sandbox:
    """Maps the agent's paths (`/Desktop`, `~/Desktop`, `Desktop`) onto one root folder."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

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


def build(root: Path) -> MCPServer:
    box = Sandbox(root)
    server = MCPServer("filesystem", instructions="Files in the user's home folder.")

    def existing(path: str) -> Path:
        real = box.resolve(path)
        if not real.exists():
            raise ToolError(f"no such file or folder: {path}")
        return real

    @server.tool(annotations=READ_ONLY)
    def list_directory(path: str = "/") -> str:
        """List the files and folders in a folder of the user's home (e.g. "/Desktop").

        Folders end with "/". Sizes are in bytes.
        """
        real = existing(path)
        if not real.is_dir():
            raise ToolError(f"not a folder: {path}")
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
        real = existing(path)
        if real.is_dir():
            raise ToolError(f"{path} is a folder; use list_directory")
        return real.read_text(encoding="utf-8", errors="replace")

    @server.tool()
    def write_file(path: str, content: str) -> str:
        """Create or overwrite a text file in the user's home with the given content."""
        real = box.resolve(path)
        if not real.parent.is_dir():
            raise ToolError(f"folder does not exist: {box.show(real.parent)}")
        real.write_text(content, encoding="utf-8")
        return f"wrote {len(content.encode('utf-8'))} bytes to {box.show(real)}"

    @server.tool(annotations=READ_ONLY)
    def search_files(pattern: str, path: str = "/") -> str:
        """Find files whose name matches a pattern (e.g. "*.pdf" or "budget"), in a folder and below."""
        base = existing(path)
        glob = pattern if any(c in pattern for c in "*?[") else f"*{pattern}*"
        hits = [
            box.show(Path(folder) / name)
            for folder, _dirs, files in os.walk(base)
            for name in files
            if fnmatch.fnmatch(name.lower(), glob.lower())
        ]
        return "\n".join(sorted(hits)) if hits else "no files match"

    @server.tool(annotations=READ_ONLY)
    def get_file_info(path: str) -> str:
        """Size, type and modification time of a file or folder in the user's home."""
        real = existing(path)
        stat = real.stat()
        kind = "folder" if real.is_dir() else "file"
        modified = datetime.fromtimestamp(stat.st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC")
        return f"{box.show(real)}: {kind}, {stat.st_size} bytes, modified {modified}"

    return server


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, required=True, help="the folder shown as home")


if __name__ == "__main__":
    serve(lambda a: build(a.root), add_args=_args)
