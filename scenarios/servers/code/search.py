"""Plain-text code search over one repository: grep, read lines, list files.

One of two competing code servers (the other, `code_symbols`, understands Python's syntax):
this one knows nothing about the language, as a shell with grep and sed would not. Paths are
relative to the repository's root (`h11/_connection.py`), so what a tool shows is what an
answer can cite. Every tool only reads, so the farm never needs to reset its folder.

    python -m mcp_farm.scenarios.servers.code.search [--repo PATH] [--transport http --port 8765]
"""

from __future__ import annotations

import argparse
import fnmatch
import re
from pathlib import Path, PurePosixPath

from mcp.types import ToolAnnotations

from mcp_farm.scenarios.servers._sdk import (
    FIXTURES,
    MCPServer,
    ToolError,
    serve,
)

READ_ONLY = ToolAnnotations(read_only_hint=True)
MAX_RESULTS = 200
"""The most matching lines one search may ask for, so one query cannot flood the context."""
MAX_LINES = 300
"""The most lines one read returns."""
SKIPPED = {".git", "__pycache__"}


class Repo:
    """The repository's text files, addressed by POSIX paths relative to its root."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        if not self.root.is_dir():
            raise SystemExit(f"--repo {root} is not a folder")

    def resolve(self, path: str) -> Path:
        rel = PurePosixPath((path or ".").strip().replace("\\", "/").lstrip("/"))
        if ".." in rel.parts:
            raise ToolError(f"path {path!r} leaves the repository")
        return self.root.joinpath(*rel.parts)

    def files(self, under: Path) -> list[str]:
        """Every file below `under`, as sorted paths relative to the root."""
        found = []
        for path in under.rglob("*"):
            rel = path.relative_to(self.root)
            if path.is_file() and not SKIPPED & set(rel.parts) and path.suffix != ".pyc":
                found.append(rel.as_posix())
        return sorted(found)

    def lines(self, rel: str) -> list[str]:
        return (self.root / rel).read_text(encoding="utf-8", errors="replace").splitlines()


def _compile(pattern: str) -> re.Pattern[str]:
    """A regular expression, or the pattern taken literally when it is not a valid one."""
    if not pattern:
        raise ToolError("the pattern is empty")
    try:
        return re.compile(pattern)
    except re.error:
        return re.compile(re.escape(pattern))


def build(root: Path) -> MCPServer:
    repo = Repo(root)
    server = MCPServer("code-search", instructions="Plain-text search over a source repository.")

    @server.tool(annotations=READ_ONLY)
    def search_text(pattern: str, path_glob: str | None = None, max_results: int = 50) -> str:
        """Find the lines of the repository's files that match a pattern.

        `pattern` is a Python regular expression (case-sensitive); one that is not a valid
        expression is searched for literally. `path_glob` limits the files searched, e.g.
        "h11/*.py" or "*_state.py". Each hit is shown as "path:line: text".
        """
        if not 1 <= max_results <= MAX_RESULTS:
            raise ToolError(f"max_results must be between 1 and {MAX_RESULTS}")
        regex = _compile(pattern)
        files = repo.files(repo.root)
        if path_glob:
            files = [f for f in files if fnmatch.fnmatchcase(f, path_glob.lstrip("/"))]
            if not files:
                raise ToolError(f"no file matches path_glob {path_glob!r}")
        hits = []
        for rel in files:
            for number, line in enumerate(repo.lines(rel), start=1):
                if regex.search(line):
                    hits.append(f"{rel}:{number}: {line.strip()}")
        if not hits:
            return f"no line matches {pattern!r}"
        more = len(hits) - max_results
        return "\n".join(hits[:max_results] + ([f"... {more} more lines"] if more > 0 else []))

    @server.tool(annotations=READ_ONLY)
    def read_lines(path: str, start: int = 1, end: int | None = None) -> str:
        """Read lines `start` to `end` (inclusive, counted from 1) of a file, each line shown
        with its number. Without `end`, reads to the end of the file (at most 300 lines)."""
        real = repo.resolve(path)
        if not real.is_file():
            raise ToolError(f"no such file: {path} (list_files shows what exists)")
        lines = repo.lines(real.relative_to(repo.root).as_posix())
        last = len(lines) if end is None else end
        if start > len(lines):
            raise ToolError(f"{path} has {len(lines)} lines; line {start} is past its end")
        if start < 1 or last < start:
            raise ToolError(f"ask for 1 <= start <= end; got start={start}, end={end}")
        stop = min(last, len(lines), start + MAX_LINES - 1)
        shown = [f"{n:>5}  {lines[n - 1]}" for n in range(start, stop + 1)]
        if stop < min(last, len(lines)):
            shown.append(f"... (stopped at {MAX_LINES} lines; continue from line {stop + 1})")
        return "\n".join(shown)

    @server.tool(annotations=READ_ONLY)
    def list_files(folder: str = ".") -> str:
        """List every file in a folder of the repository and its subfolders, with line counts.
        "." is the repository's root."""
        real = repo.resolve(folder)
        if not real.is_dir():
            raise ToolError(f"no such folder: {folder}")
        files = repo.files(real)
        if not files:
            return "(no files)"
        return "\n".join(f"{rel}\t{len(repo.lines(rel))} lines" for rel in files)

    return server


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo",
        type=Path,
        default=FIXTURES / "code" / "h11",
        help="the repository's root folder; default: the bundled h11 snapshot (only read)",
    )


if __name__ == "__main__":
    serve(lambda a: build(a.repo), add_args=_args)
