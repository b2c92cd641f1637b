"""A cited file inside a web link to a repository: at a full commit hash
(`https://host/o/r/blob/<commit>/path#L12`, `…/-/blob/<commit>/path`, `…/src/commit/<commit>/path`,
`https://raw.host/o/r/<commit>/path`), or at a branch or tag through a viewer's word
(`…/blob/main/path`, `…/-/blob/v1.2/path`, `…/src/branch/main/path`, `…/raw/main/path`,
`https://raw.githubusercontent.com/o/r/main/path`). The line is checked in the pinned tree either
way; a link at a branch or tag names its ref (`ref`), since the tree it points at moves and may
no longer be the pinned one. A branch name with `/` in it (`feature/x`) cannot be told from the
path by the link alone: `Linked.path` is all after the ref's first part, and the check moves
leading parts into the ref until the file is found (see `grounding`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcp_farm.workers.answer.lines import FRAGMENT, Lines, numbers

URL = re.compile(r"https?://[^\s<>()\[\]`\"'*]+")
# Where the repository path starts inside a link: after a full commit hash (40 hex digits for
# SHA-1, 64 for SHA-256), whatever viewer word comes before it.
REPO_PATH = re.compile(r"/(?:[0-9a-fA-F]{64}|[0-9a-fA-F]{40})/(?P<path>[^#?\s]+)")
# A branch or tag: one part after a viewer's word (GitHub and Gitea `blob`/`raw`/`tree`, GitLab
# `-/blob`, Gitea and Bitbucket `src[/branch|/tag|/commit]`), or the third part of a raw host.
REF_PATH = re.compile(
    r"^https?://(?:raw\.githubusercontent\.com/[^/\s]+/[^/\s]+"
    r"|[^/\s]+/(?:[^/\s]+/)+?(?:-/)?(?:blob|raw|tree|src(?:/(?:branch|tag|commit))?))"
    r"/(?P<ref>[^/#?\s]+)/(?P<path>[^#?\s]+)"
)


@dataclass(frozen=True)
class Linked:
    """A path read from a link, and the line its fragment names."""

    path: str
    lines: Lines
    ref: str | None = None
    """The branch or tag the link names (None at a full commit hash)."""


def repo_path(url: str, pattern: re.Pattern[str]) -> tuple[str, str | None] | None:
    """The file the link points at, when it is a path `pattern` accepts (a known extension), and
    the branch or tag it is read at (None at a full commit hash)."""
    found = REPO_PATH.search(url)
    ref = None
    if found is None:
        found = REF_PATH.match(url)
        ref = found.group("ref") if found is not None else None
    if found is None:
        return None
    path = found.group("path").rstrip(".,;:")
    return (path, ref) if pattern.fullmatch(path) else None


def linked(prose: str, url: re.Match[str], pattern: re.Pattern[str]) -> Linked | None:
    """The path and line of a bare link at `url` in the prose (`…/blob/<sha>/a.py#L12-L20`)."""
    text = url.group(0).rstrip(".,;:!?")
    found = repo_path(text, pattern)
    if found is None:
        return None
    path, ref = found
    end = url.start() + len(text)
    hash_at = text.find("#")
    fragment = FRAGMENT.search(text, hash_at) if hash_at >= 0 else None
    if fragment is not None and fragment.start() == hash_at:
        read = numbers(prose, url.start() + fragment.end())
        if read is not None:
            return Linked(path, Lines(max(end, read.end), read.start, read.last, read.bad), ref)
    return Linked(path, Lines(end), ref)
