"""Start the reference git MCP server (`mcp-server-git`) on a small, deterministic repository.

Git refuses to commit a nested `.git` folder, so the fixture keeps only the repository's
final working tree (scenarios/fixtures/projects/webapp) and this wrapper writes its history
into the trial's sandbox when the server starts. Authors, dates and messages are fixed and
global git configuration is ignored, so every commit hash is the same on every machine and
a scenario may name one. Then the wrapper becomes the real server (exec), confined to the
repository and working from the sandbox, so a relative `repo_path` such as `webapp` works.

    python scenarios/launchers/git_fixture.py --server .tools/py/bin/mcp-server-git SANDBOX

It uses only the standard library, so it runs by path without importing the farm.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

REPO = "webapp"
"""The repository's folder inside the sandbox."""

Tree = Mapping[str, str]
Content = str | Callable[[Tree], str]
"""A file's text, given outright or derived from the fixture's final version."""


def final(path: str) -> Callable[[Tree], str]:
    """The file exactly as the fixture has it."""
    return lambda tree: tree[path]


def edited(path: str, *changes: tuple[str, str]) -> Callable[[Tree], str]:
    """The fixture's file with (new, old) replacements undone: an earlier version of it."""

    def earlier(tree: Tree) -> str:
        text = tree[path]
        for new, old in changes:
            if new not in text:
                raise ValueError(f"{path}: the fixture no longer contains {new!r}")
            text = text.replace(new, old)
        return text

    return earlier


@dataclass(frozen=True)
class Commit:
    author: str
    """`Name <email>`; also the committer."""
    date: str
    """ISO 8601 with offset; author and commit date."""
    message: str
    files: dict[str, Content] = field(default_factory=dict)
    """What the commit writes; the last commit on main writes the whole fixture tree."""
    branch: str = "main"


MARIA = "Maria Lopez <maria.lopez@example.org>"
TOM = "Tom Becker <tom.becker@example.org>"
AISHA = "Aisha Khan <aisha.khan@example.org>"

RELEASE_241 = (
    "## 2.4.1 (2026-03-10)\n- Sessions now last 30 minutes of inactivity instead of 15.\n\n",
    "",
)
RELEASE_240 = (
    "## 2.4.0 (2026-03-02)\n- CSV export on the dashboard.\n"
    "- Fixed: signing in failed when the email address had capital letters.\n\n",
    "",
)

HISTORY = [
    Commit(
        MARIA,
        "2026-01-12T10:00:00+01:00",
        "Initial sign-in page and dashboard",
        {
            "README.md": edited("README.md", ("2.4.1", "2.3.0")),
            "package.json": edited("package.json", ("2.4.1", "2.3.0")),
            "CHANGELOG.md": edited("CHANGELOG.md", RELEASE_241, RELEASE_240),
            "src/login.js": edited("src/login.js", (".trim().toLowerCase()", ".trim()")),
            "src/session.js": edited("src/session.js", ("= 30;", "= 15;")),
            "src/dashboard.js": final("src/dashboard.js"),
        },
    ),
    Commit(
        TOM,
        "2026-02-03T14:20:00+01:00",
        "Add CSV export to the dashboard",
        {"src/export.js": final("src/export.js")},
    ),
    Commit(
        AISHA,
        "2026-02-19T11:05:00+01:00",
        "Fix login bug: match email addresses case-insensitively\n\n"
        "Users who typed their address with capital letters could not sign in.",
        {"src/login.js": final("src/login.js")},
    ),
    Commit(
        MARIA,
        "2026-03-02T17:30:00+01:00",
        "Release 2.4.0",
        {
            "README.md": edited("README.md", ("2.4.1", "2.4.0")),
            "package.json": edited("package.json", ("2.4.1", "2.4.0")),
            "CHANGELOG.md": edited("CHANGELOG.md", RELEASE_241),
        },
    ),
    Commit(
        AISHA,
        "2026-03-05T09:40:00+01:00",
        "Add a dark mode toggle (work in progress)",
        {"src/theme.js": 'export const THEMES = ["light", "dark"];\n'},
        branch="feature/dark-mode",
    ),
    Commit(TOM, "2026-03-10T16:45:00+01:00", "Raise the session timeout to 30 minutes (2.4.1)"),
]


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    """Run git isolated from the user's and the system's configuration."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], env=env, input=stdin, capture_output=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode().strip()


def _read_tree(repo: Path) -> dict[str, str]:
    """The working tree's files (not git's own), by POSIX path."""
    paths = (p.relative_to(repo) for p in sorted(repo.rglob("*")) if p.is_file())
    return {
        p.as_posix(): (repo / p).read_text(encoding="utf-8") for p in paths if p.parts[0] != ".git"
    }


def _data(text: str) -> bytes:
    raw = text.encode("utf-8")
    return b"data %d\n%s\n" % (len(raw), raw)


def _stream(tree: Tree) -> bytes:
    """HISTORY as one `git fast-import` stream: a few git processes instead of dozens."""
    out: list[bytes] = []
    heads: dict[str, int] = {}
    for mark, commit in enumerate(HISTORY, start=1):
        when = datetime.fromisoformat(commit.date)
        who = f"{commit.author} {int(when.timestamp())} {when.strftime('%z')}".encode()
        parent = heads.get(commit.branch, heads.get("main"))
        out += [
            f"commit refs/heads/{commit.branch}\nmark :{mark}\n".encode(),
            b"author %s\ncommitter %s\n" % (who, who),
            _data(commit.message + "\n"),  # as `git commit` ends it
            f"from :{parent}\n".encode() if parent else b"",
        ]
        files = commit.files or tree  # no files given: arrive at the fixture's tree
        if not commit.files:
            out.append(b"deleteall\n")
        for path, content in sorted(files.items()):
            text = content if isinstance(content, str) else content(tree)
            out += [f"M 100644 inline {path}\n".encode(), _data(text)]
        heads[commit.branch] = mark
    return b"".join(out)


def build(repo: Path) -> str:
    """Give the fixture tree in `repo` the history in HISTORY; returns main's head commit."""
    tree = _read_tree(repo)
    _git(repo, "init", "--quiet", "--initial-branch=main")
    _git(repo, "fast-import", "--quiet", stdin=_stream(tree))
    _git(repo, "reset", "--quiet")  # the index from main's head; the files are already there
    if _git(repo, "status", "--porcelain"):
        raise RuntimeError("the history does not end at the fixture's tree")
    return _git(repo, "rev-parse", "HEAD")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", type=Path, required=True, help="the mcp-server-git program")
    parser.add_argument("sandbox", type=Path, help="a fresh copy of scenarios/fixtures/projects")
    args = parser.parse_args()
    if not os.access(args.server, os.X_OK):
        sys.exit(f"{args.server} is missing: install it with `bash scripts/setup.sh --dev`")
    try:
        build(args.sandbox / REPO)
    except (OSError, RuntimeError, ValueError) as exc:
        sys.exit(f"could not build the git fixture in {args.sandbox}: {exc}")
    server, repo = str(args.server.resolve()), str(args.sandbox.resolve() / REPO)
    os.chdir(args.sandbox)
    os.execv(server, [server, "--repository", repo])


if __name__ == "__main__":
    main()
