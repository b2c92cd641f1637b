"""Turn a fixture source tree into a git repository at one pinned commit.

Answers about code cite `path:line`, and citations are checked against a commit, so the tree
under scenarios/fixtures/code/<name> is committed once, deterministically: every file as mode
100644, fixed author, committer, dates and message, and the user's and the system's git
configuration ignored. The commit SHA then depends only on the files' paths and bytes, and a
suite can pin it (`repo: {fixture, commit}`); a fixture edited without updating the pin fails
loudly instead of grading answers against the wrong lines.

As a server wrapper it makes the trial's sandbox (a fresh copy of the fixture) a checkout of
the pinned commit, then becomes the server (exec), working from the sandbox:

    python scenarios/coderepo.py --commit SHA SANDBOX -- CMD ARGS...

It uses only the standard library, so it runs by path without importing the farm.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mcp_farm.schema.errors import FarmError

AUTHOR = b"Fixture Bot <fixtures@mcp-farm.invalid> 1767225600 +0000"
"""Author and committer of the one commit (2026-01-01 00:00 UTC)."""
MESSAGE = b"Pinned source snapshot\n"
SKIPPED = ("__pycache__", ".git")
"""Folders never committed: git's own, and bytecode a local run may have left behind."""


class CodeRepoError(FarmError):
    """Building a checkout failed, or gave another commit than the one pinned."""


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
        message = done.stderr.decode(errors="replace").strip()
        raise CodeRepoError(f"git {' '.join(args)} failed in {repo}: {message}")
    return done.stdout.decode().strip()


def _files(root: Path) -> list[Path]:
    """The tree's files, by relative path, without git's folder or bytecode."""
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not set(rel.parts) & set(SKIPPED) and path.suffix != ".pyc":
            found.append(rel)
    return found


def _stream(root: Path) -> bytes:
    """One `git fast-import` commit holding every file of the tree."""
    out = [b"commit refs/heads/main\n", b"author %s\ncommitter %s\n" % (AUTHOR, AUTHOR)]
    out.append(b"data %d\n%s" % (len(MESSAGE), MESSAGE))
    for rel in _files(root):
        raw = (root / rel).read_bytes()
        out += [f"M 100644 inline {rel.as_posix()}\n".encode(), b"data %d\n%s\n" % (len(raw), raw)]
    return b"".join(out)


def commit_in_place(repo: Path) -> str:
    """Make the tree in `repo` (no .git yet) a repository with one commit; returns its SHA."""
    if (repo / ".git").exists():
        raise CodeRepoError(f"{repo} is already a git repository")
    _git(repo, "init", "--quiet", "--initial-branch=main")
    (repo / ".git" / "info").mkdir(parents=True, exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("__pycache__/\n*.pyc\n")
    _git(repo, "fast-import", "--quiet", stdin=_stream(repo))
    _git(repo, "reset", "--quiet")  # the index from the commit; the files are already there
    if _git(repo, "status", "--porcelain"):
        raise CodeRepoError(f"the commit in {repo} does not match its working tree")
    return _git(repo, "rev-parse", "HEAD")


def build_checkout(source: Path, dest: Path) -> str:
    """Make `dest` a git repository whose one commit holds `source`'s files; returns the SHA."""
    if source.resolve() != dest.resolve():
        shutil.copytree(source, dest, ignore=shutil.ignore_patterns(*SKIPPED, "*.pyc"))
    return commit_in_place(dest)


def _mismatch(where: Path, built: str, pinned: str) -> CodeRepoError:
    return CodeRepoError(
        f"{where} builds commit {built}, but the suite pins {pinned}: the fixture changed; "
        "update `repo.commit` (and re-check every citation) or restore the fixture"
    )


def checkout(fixture_dir: Path, commit: str, cache_root: Path) -> Path:
    """A checkout of `fixture_dir` at `commit` under cache_root/<commit>, built once.

    Two processes may race: each builds in its own temporary folder and renames it into
    place; the loser finds the winner's (identical) checkout and throws its own away.
    """
    target = cache_root / commit
    if target.is_dir():
        return target
    cache_root.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{commit[:12]}-", dir=cache_root))
    try:
        built = build_checkout(fixture_dir, scratch / "tree")
        if built != commit:
            raise _mismatch(fixture_dir, built, commit)
        try:
            (scratch / "tree").rename(target)
        except OSError:
            if not target.is_dir():  # not a lost race: a real failure
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--" not in args:
        sys.exit("usage: coderepo.py --commit SHA SANDBOX -- CMD [ARGS...]")
    split = args.index("--")
    command = args[split + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", required=True, help="the SHA the sandbox must build")
    parser.add_argument("sandbox", type=Path, help="a fresh copy of the fixture tree")
    opts = parser.parse_args(args[:split])
    if not command:
        sys.exit("no server command after `--`")
    try:
        built = commit_in_place(opts.sandbox)
    except (OSError, CodeRepoError) as exc:
        sys.exit(f"could not make {opts.sandbox} a git checkout: {exc}")
    if built != opts.commit:
        sys.exit(str(_mismatch(opts.sandbox, built, opts.commit)))
    os.chdir(opts.sandbox)  # so a relative repo path such as "." names the checkout
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.exit(f"could not start {command[0]}: {exc}")


if __name__ == "__main__":
    main()
