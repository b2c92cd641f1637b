"""A suite with a pattern that cannot be applied stops `farm run` before anything is recorded,
and `farm scenarios validate` lists it; neither prints a traceback."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path

import yaml

from mcp_farm.scenarios import suite_path
from tests.forkrun import farm_cli

BASIC = yaml.safe_load(suite_path("basic").read_text(encoding="utf-8"))


def farm(*args: str) -> subprocess.CompletedProcess[str]:
    return farm_cli(args, timeout=300, env={"COLUMNS": "400", "PATH": "/usr/bin:/bin"})


def _broken_suite(tmp_path: Path) -> Path:
    suite = {**BASIC, "scenarios": [dict(s) for s in BASIC["scenarios"][:4]]}
    # `[/]` would also be read as Rich markup if a message were printed unescaped.
    suite["scenarios"][3]["expect"][0]["params"] = {"path": {"regex": "([/]a-z"}}
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(suite), encoding="utf-8")
    return path


def test_run_refuses_a_suite_with_an_invalid_regex_before_recording_a_trial(
    tmp_path: Path,
) -> None:
    suite = _broken_suite(tmp_path)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        yaml.safe_dump(
            {
                "name": "broken",
                "models": [
                    {"id": "m", "adapter": "scripted", "model": "s", "script": [{"answer": "x"}]}
                ],
                "prompts": ["native"],
                "scenarios": {"suites": [str(suite)]},
                "repetitions": 1,
            }
        ),
        encoding="utf-8",
    )
    data = tmp_path / "data"
    done = farm("run", str(sweep), "--data-dir", str(data))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: {suite}: scenarios[3].expect[0].params.path.regex: invalid regular expression: "
        "missing ), unterminated subpattern at position 0 (got '([/]a-z')"
    ]
    database = data / "farm.sqlite"
    if database.exists():
        assert sqlite3.connect(database).execute("select count(*) from trial").fetchone() == (0,)


def test_validate_lists_an_invalid_regex_with_its_file_and_field(tmp_path: Path) -> None:
    suite = _broken_suite(tmp_path)
    done = farm("scenarios", "validate", str(suite))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    field = "scenarios[3].expect[0].params.path.regex"
    assert re.search(
        rf"{re.escape(f'{suite}:')}\d+: {re.escape(field)}: invalid regular", done.stdout
    )
    assert "([/]a-z" in done.stdout


def test_worker_refuses_an_unknown_log_level_before_enrolling(tmp_path: Path) -> None:
    db = tmp_path / "farm.sqlite"
    done = farm("worker", "--tags", "cpu", "--loglevel", "loud", "--db", f"sqlite:///{db}")
    assert done.returncode == 2
    assert "--loglevel 'loud': use one of DEBUG, INFO, WARNING" in done.stderr
    assert not db.exists()
