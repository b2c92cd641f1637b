"""Throwaway Redis and PostgreSQL servers the fault tests may kill, on spare loopback ports.

They are started from the machine's own binaries (never Docker), so a test can stop, kill and
restart them without touching the shared services other tests use.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from sqlalchemy import text
from sqlalchemy.engine import Engine

from mcp_farm.schema.db import (
    init_db,
    make_engine,
)
from tests.distributed.conftest import (
    Farm,
    wait_until,
)
from tests.helpers import free_port


def _missing(what: str) -> None:
    # CI runs the fault suite for real: a missing binary is a failure there, never a skip.
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is needed for the fault tests (bash scripts/services.sh installs it)")
    pytest.skip(f"{what} is not installed")


class OwnRedis:
    """A Redis on its own port that keeps nothing on disk: a restart starts empty."""

    def __init__(self, root: Path) -> None:
        self.root, self.port = root, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.root)],
            stdout=(self.root / "redis.log").open("ab"),
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        client = redis.Redis.from_url(self.url)
        wait_until(lambda: self._answers(client), 20, "the test Redis to answer")
        client.close()

    @staticmethod
    def _answers(client: redis.Redis) -> bool:
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


class OwnPostgres:
    """A PostgreSQL cluster in a temporary folder, on its own port, trust auth."""

    def __init__(self) -> None:
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not bins:
            _missing("PostgreSQL's server binaries (/usr/lib/postgresql/*/bin)")
        self.bin = Path(bins[-1]).parent
        # initdb and pg_ctl refuse to run as root; the postgres user cannot enter pytest's
        # root-only temporary folders, so the cluster lives in a folder of its own.
        self.root = Path(tempfile.mkdtemp(prefix="farm-fault-pg-"))
        self.port = free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        self._as_owner([str(self.bin / "initdb"), "-D", str(self.root / "data"), "-A", "trust",
                        "-U", "postgres"])  # fmt: skip

    def _as_owner(self, argv: list[str]) -> None:
        if os.geteuid() == 0:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        subprocess.run(argv, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -k {self.root}"
        self._as_owner([str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-l",
                        str(self.root / "log"), "-o", options, "-w", "start"])  # fmt: skip

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server; `immediate` is as abrupt as a crash."""
        self._as_owner([str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", mode,
                        "-w", "stop"])  # fmt: skip

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    if shutil.which("redis-server") is None:
        _missing("redis-server")
    server = OwnRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def own_postgres() -> Iterator[OwnPostgres]:
    server = OwnPostgres()
    server.start()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture
def fault_farm(tmp_path: Path, own_redis: OwnRedis, own_postgres: OwnPostgres) -> Iterator[Farm]:
    """A farm on the throwaway servers, with a one-second heartbeat (leases lapse in 3 s);
    FARM_FAULT_HEARTBEAT_S=10 runs the same tests with the default heartbeat."""
    engine: Engine = make_engine(own_postgres.url)
    with engine.connect() as conn:
        conn.execute(text("select 1"))
    init_db(engine)
    logs = tmp_path / "logs"
    logs.mkdir()
    env = dict(os.environ) | {
        "FARM_DATABASE_URL": own_postgres.url,
        "FARM_BROKER_URL": own_redis.url,
        "FARM_DATA_DIR": str(tmp_path / "data"),
        "FARM_HEARTBEAT_S": os.environ.get("FARM_FAULT_HEARTBEAT_S", "1"),
        "FARM_RETRY_BACKOFF_S": "0.2",
        "FARM_SERVER_START_TIMEOUT_S": "30",
        # Their scripted user models answer their own cards, not the calibration's questions
        # (which tests/workers/usersim/test_off_script.py holds).
        "FARM_USER_CHECK": "false",
        "COLUMNS": "160",
    }
    farm = Farm(engine, own_postgres.url, own_redis.url, tmp_path / "data", logs, env)
    try:
        yield farm
    finally:
        for proc in farm.procs:
            farm.stop(proc)
        engine.dispose()
