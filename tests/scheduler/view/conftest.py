"""One real embedded sweep for the explorer's tests: two scripted models on a real filesystem
server, one ideal, one careless whose tool call and reply carry script payloads."""

from __future__ import annotations

import os
import select
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from sqlalchemy.engine import Engine

from mcp_farm.scheduler.view.queries import read_only
from mcp_farm.schema.db import make_engine
from tests.forkrun import farm_cli

LOCAL = "http://127.0.0.1"
"""The base URL of in-process clients: a loopback address, as the explorer answers only those."""

TOOL_PAYLOAD = "/Documents/<script>document.title='pwned-tool'</script>.md"
REPLY_PAYLOAD = (
    "<script>document.title='pwned-reply'</script>"
    "<img src=x onerror=\"document.title='pwned-img'\">"
)

SWEEP = {
    "name": "explorer-check",
    "models": [
        {
            "id": "ideal",
            "adapter": "scripted",
            "model": "script",
            "script": [
                {"call": {"name": "search_files", "arguments": {"pattern": "budget"}}},
                {
                    "call": {
                        "name": "read_file",
                        "arguments": {"path": "/Documents/budget-q1-2026.md"},
                    }
                },
                {"answer": "The Q1 2026 budget totals 46,550 EUR."},
            ],
        },
        {
            "id": "careless",
            "adapter": "scripted",
            "model": "script",
            "script": [
                {"call": {"name": "search_files", "arguments": {"pattern": "budget"}}},
                {"call": {"name": "read_file", "arguments": {"path": TOOL_PAYLOAD}}},
                {"answer": REPLY_PAYLOAD},
            ],
        },
    ],
    "prompts": ["native"],
    "scenarios": {"ids": ["fs.budget-total"]},
    "repetitions": 2,
}


def served_url(proc: subprocess.Popen[bytes], seconds: float = 60) -> str:
    """The URL `farm view` printed, read from its raw stdout with a bounded wait."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    seen = b""
    deadline = time.monotonic() + seconds
    while b"farm view: " not in seen or not seen.split(b"farm view: ", 1)[1].count(b"\n"):
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(left, 0))
        assert ready, f"farm view printed no URL within {seconds} s: {seen!r}"
        chunk = os.read(fd, 4096)
        assert chunk, f"farm view exited: {proc.stderr.read() if proc.stderr else b''!r}"
        seen += chunk
    return seen.split(b"farm view: ", 1)[1].split(b"\n", 1)[0].decode().strip()


def farm(*args: str, data: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return farm_cli([*args, "--data-dir", str(data)], timeout=timeout)


@dataclass(frozen=True)
class Recorded:
    data: Path
    sweep_id: str
    careless: str
    """A trial id of the careless model (wrong_params)."""
    ideal: str
    """The ideal model's trial of the same scenario, repetition and wording."""

    def engine(self) -> Engine:
        return read_only(make_engine(f"sqlite:///{self.data / 'farm.sqlite'}"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    root = tmp_path_factory.mktemp("explorer")
    path = root / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    done = farm("run", str(path), data=root / "data")
    assert done.returncode == 0, done.stderr
    db = sqlite3.connect(root / "data" / "farm.sqlite")
    sweep_id = db.execute("select sweep_id from sweep").fetchone()[0]
    ids = dict(
        db.execute(
            "select model_id, trial_id from trial where repetition = 0 and variant = 0"
        ).fetchall()
    )
    db.close()
    yield Recorded(root / "data", sweep_id, ids["careless"], ids["ideal"])
