"""A real farm for one test: Postgres, Redis, `farm worker` processes and the `farm` CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import select, text
from sqlalchemy.engine import Engine
from sqlmodel import col

from mcp_farm.schema.db import (
    NodeRow,
    init_db,
    session_scope,
)
from tests.forkrun import farm_cli

ROOT = Path(__file__).resolve().parents[2]
SLOW_SERVER = ROOT / "tests" / "servers" / "slow.py"


def wait_until(check: Callable[[], Any], seconds: float, what: str) -> Any:
    """Poll `check` until it returns something truthy; fail after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.25)
    pytest.fail(f"timed out after {seconds:g} s waiting for {what}")


@dataclass
class Farm:
    engine: Engine
    db_url: str
    broker_url: str
    data_dir: Path
    logs: Path
    env: dict[str, str]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = farm_cli(args, env=self.env, timeout=300, cwd=ROOT)
        if check and done.returncode != 0:
            pytest.fail(f"farm {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
        return done

    def start(self, argv: list[str], log_name: str, **env: str) -> subprocess.Popen[bytes]:
        """A process in its own session, so a test can kill it with all its children."""
        log = (self.logs / log_name).open("ab")
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env | env,
            cwd=ROOT,
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def worker(self, tags: str, name: str, *extra: str, **env: str) -> subprocess.Popen[bytes]:
        """Start `farm worker` and wait until it has enrolled."""
        argv = [
            sys.executable,
            "-m",
            "mcp_farm.scheduler.cli.app",
            "worker",
            "--tags",
            tags,
            "--name",
            name,
        ]
        proc = self.start([*argv, *extra], f"{name}.log", **env)
        wait_until(lambda: self.node_up(name, proc), 60, f"worker {name} to enrol")
        return proc

    def node_up(self, name: str, proc: subprocess.Popen[bytes]) -> bool:
        if proc.poll() is not None:
            pytest.fail(f"worker {name} exited with {proc.returncode}: see {self.logs}")
        with session_scope(self.engine) as session:
            row = session.execute(
                select(col(NodeRow.stopped_at)).where(col(NodeRow.name) == name)
            ).first()
        return row is not None and row[0] is None

    def stop(self, proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
        if proc.poll() is None:
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def rows(self, sql: str, **params: Any) -> list[Any]:
        with self.engine.connect() as conn:
            return list(conn.execute(text(sql), params).all())

    def sweep_file(self, tmp_path: Path, spec: dict[str, Any]) -> Path:
        path = tmp_path / f"{spec['name']}.yaml"
        path.write_text(yaml.safe_dump(spec))
        return path

    def submit(self, sweep: Path) -> str:
        out = self.cli("sweep", "submit", str(sweep)).stdout
        return out.split(":", 1)[0].strip()

    def scorecard(self, sweep_id: str, seconds: float = 180) -> dict[str, Any]:
        """The sweep's stored scorecard (JSON), once the aggregate task has written it."""
        found = wait_until(
            lambda: self.rows("select card_json from scorecard where sweep_id = :s", s=sweep_id),
            seconds,
            "the farm's scorecard",
        )
        card: dict[str, Any] = json.loads(found[0][0])
        return card


@pytest.fixture
def farm(tmp_path: Path, pg_engine: Engine, redis_url: str) -> Iterator[Farm]:
    init_db(pg_engine)
    db_url = pg_engine.url.render_as_string(hide_password=False)
    logs = tmp_path / "logs"
    logs.mkdir()
    env = dict(os.environ) | {
        "FARM_DATABASE_URL": db_url,
        "FARM_BROKER_URL": redis_url,
        "FARM_DATA_DIR": str(tmp_path / "data"),
        "FARM_HEARTBEAT_S": "1",
        "FARM_RETRY_BACKOFF_S": "0.2",
        "FARM_SERVER_START_TIMEOUT_S": "30",
        # Their scripted user models answer their own cards, not the calibration's questions
        # (which tests/workers/usersim/test_off_script.py holds).
        "FARM_USER_CHECK": "false",
        "COLUMNS": "120",
    }
    farm = Farm(pg_engine, db_url, redis_url, tmp_path / "data", logs, env)
    try:
        yield farm
    finally:
        for proc in farm.procs:
            farm.stop(proc)
