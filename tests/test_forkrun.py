"""The forked `farm` of tests/forkrun.py prints and exits exactly as a fresh interpreter does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.forkrun import CLI, farm_cli


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["scenarios", "list"],
        ["no-such-command"],
        ["sweep", "status", "no-such-sweep"],
    ],
)
def test_a_forked_command_prints_and_exits_as_a_fresh_process_does(
    args: list[str], tmp_path: Path
) -> None:
    # COLUMNS and FARM_DATA_DIR come from the command's environment, never the zygote's.
    env = {"COLUMNS": "77", "PATH": "/usr/bin:/bin", "FARM_DATA_DIR": str(tmp_path / "data")}
    fresh = subprocess.run(
        [sys.executable, "-m", CLI, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    forked = farm_cli(args, env=env, cwd=tmp_path, timeout=120)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        fresh.returncode,
        fresh.stdout,
        fresh.stderr,
    )


def test_a_forked_command_past_its_timeout_is_killed_and_raises(tmp_path: Path) -> None:
    # `farm view` serves until stopped: the timeout must end it as subprocess.run would.
    assert farm_cli(["db", "init", "--data-dir", str(tmp_path)], timeout=120).returncode == 0
    with pytest.raises(subprocess.TimeoutExpired):
        farm_cli(["view", "--port", "0", "--data-dir", str(tmp_path)], timeout=5)
