"""Placeholders in a stdio server's command, expanded when the pool starts it; every path
in them absolute."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcp_farm.schema import ServerDef
from mcp_farm.workers.mcp.pool import (
    REPO_ROOT,
    _expand,
    launch,
)


def test_root_names_the_checkout_that_holds_the_scenarios_package(tmp_path: Path) -> None:
    assert (REPO_ROOT / "scenarios" / "servers.yaml").is_file()
    argv = ["{python}", "{root}/.tools/py/bin/server", "--dir", "{sandbox}", "{attached}"]
    expanded = [_expand(a, tmp_path, ["a", "b"]) for a in argv]
    assert expanded == [
        sys.executable,
        f"{REPO_ROOT}/.tools/py/bin/server",
        "--dir",
        str(tmp_path),
        "a,b",
    ]


def test_every_path_a_server_is_handed_is_absolute_even_from_a_relative_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    server = ServerDef(
        name="notes",
        command=["{python}", "{root}/srv.py", "--data", "{sandbox}"],
        env={"NOTES_FILE": "{sandbox}/notes.jsonl"},
        sandbox="notes",
    )
    how = launch(server, Path("farm-data/trials/t1/notes-1"), ["notes"], {})
    assert how.argv[-1] == str(tmp_path / "farm-data/trials/t1/notes-1")
    assert how.env == {"NOTES_FILE": f"{tmp_path}/farm-data/trials/t1/notes-1/notes.jsonl"}
    assert all(Path(a).is_absolute() for a in how.argv if "/" in a)
    assert _expand("--under {sandboxes}", None, [], 1, Path("farm-data")) == (
        f"--under {tmp_path / 'farm-data'}"
    )
