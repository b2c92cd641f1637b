"""Placeholders in a stdio server's command, expanded when the pool starts it."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp_farm.workers.mcp.pool import (
    REPO_ROOT,
    _expand,
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
