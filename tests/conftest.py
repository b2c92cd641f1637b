from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from mcp_farm.schema import Settings
from mcp_farm.schema.db import make_engine

PG_ADMIN = os.environ.get(
    "FARM_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


def _redis_for_this_process(base: str) -> str:
    """The test Redis database of this pytest process: the base database from FARM_TEST_REDIS
    when pytest runs alone, the base plus one plus the worker's index under pytest-xdist, so
    parallel workers never flush each other's keys and the base stays free for a serial lane."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1", ... under xdist
    if not worker:
        return base
    prefix, _, db = base.rpartition("/")
    return f"{prefix}/{int(db or 0) + 1 + int(worker.removeprefix('gw'))}"


REDIS_TEST = _redis_for_this_process(os.environ.get("FARM_TEST_REDIS", "redis://127.0.0.1:6379/11"))
SERVICE_FIXTURES = {"pg_engine", "redis_url"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that needs the test PostgreSQL or Redis, so `--fast` can leave it out.

    scripts/test.sh's fault lane collects tests/faults only: a fault test elsewhere would run
    in no lane, so it stops the run."""
    faults = Path(__file__).parent / "faults"
    for item in items:
        if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.services)
        if item.get_closest_marker("faults") and faults not in item.path.parents:
            raise pytest.UsageError(f"{item.nodeid}: fault tests live in tests/faults")


def _unavailable(what: str, where: str, problem: object) -> None:
    # CI runs against real services: a missing one is a failure there, never a silent skip.
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required in CI and unreachable at {where}: {problem}")
    pytest.skip(f"no {what} at {where}")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings for one test: its own data folder and SQLite file."""
    return Settings(
        data_dir=tmp_path / "data",
        database_url=f"sqlite:///{tmp_path / 'data' / 'farm.sqlite'}",
        server_start_timeout_s=20.0,
    )


@pytest.fixture
def pg_engine() -> Iterator[Engine]:
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    admin = make_engine(PG_ADMIN).execution_options(isolation_level="AUTOCOMMIT")
    name = f"farm_test_{uuid.uuid4().hex[:10]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'create database "{name}"'))
    except OperationalError as exc:
        _unavailable("PostgreSQL", PG_ADMIN, exc.orig)
    engine = make_engine(PG_ADMIN.rsplit("/", 1)[0] + f"/{name}")
    try:
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'drop database "{name}" with (force)'))
        admin.dispose()


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A Redis database emptied before and after the test."""
    client = redis.Redis.from_url(REDIS_TEST)
    try:
        client.flushdb()
    except redis.RedisError as exc:
        _unavailable("Redis", REDIS_TEST, exc)
    try:
        yield REDIS_TEST
    finally:
        client.flushdb()
        client.close()


@pytest.fixture(autouse=True)
def _no_secrets_between_tests() -> Iterator[None]:
    """Secrets the farm remembers (schema/redact.py) live for a process; a test starts with
    none, so one test's key is never masked in another's results."""
    from mcp_farm.schema.redact import forget_secrets

    forget_secrets()
    yield
    forget_secrets()
