"""A cited file inside a web link to a repository at a full commit hash:
`https://host/o/r/blob/<commit>/path#L12`, `…/-/blob/<commit>/path`, `…/src/commit/<commit>/path`,
`https://raw.host/o/r/<commit>/path`. A link at a branch or short ref (`…/blob/main/path`) names a
tree that moves, so it is no citation of a line."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcp_farm.workers.answer.lines import FRAGMENT, Lines, numbers

URL = re.compile(r"https?://[^\s<>()\[\]`\"'*]+")
# Where the repository path starts inside a link: after a full commit hash (40 hex digits for
# SHA-1, 64 for SHA-256), whatever viewer word comes before it.
REPO_PATH = re.compile(r"/(?:[0-9a-fA-F]{64}|[0-9a-fA-F]{40})/(?P<path>[^#?\s]+)")


@dataclass(frozen=True)
class Linked:
    """A path read from a link, and the line its fragment names."""

    path: str
    lines: Lines


def repo_path(url: str, pattern: re.Pattern[str]) -> str | None:
    """The file the link points at, when it is a path `pattern` accepts (a known extension)."""
    found = REPO_PATH.search(url)
    if found is None:
        return None
    path = found.group("path").rstrip(".,;:")
    return path if pattern.fullmatch(path) else None


def linked(prose: str, url: re.Match[str], pattern: re.Pattern[str]) -> Linked | None:
    """The path and line of a bare link at `url` in the prose (`…/blob/<sha>/a.py#L12-L20`)."""
    text = url.group(0).rstrip(".,;:!?")
    path = repo_path(text, pattern)
    if path is None:
        return None
    end = url.start() + len(text)
    hash_at = text.find("#")
    fragment = FRAGMENT.search(text, hash_at) if hash_at >= 0 else None
    if fragment is not None and fragment.start() == hash_at:
        read = numbers(prose, url.start() + fragment.end())
        if read is not None:
            return Linked(path, Lines(max(end, read.end), read.start, read.last, read.bad))
    return Linked(path, Lines(end))
