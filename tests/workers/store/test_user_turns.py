"""The cache of user turns in the results database, on PostgreSQL (where distributed workers
share it) and SQLite: the first reply kept under a key wins, a later writer changes nothing,
and an unmigrated database is a StoreError the loop treats as a miss."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from sqlalchemy.engine import Engine

from mcp_farm.schema import StoreError
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.schema.redact import remember_secret
from mcp_farm.workers.store.user_turns import find_user_turn, save_user_turn
from mcp_farm.workers.usersim.cache import DbTurnCache


def first_writer_wins(engine: Engine) -> None:
    init_db(engine)
    assert find_user_turn(engine=engine, key="k1") is None
    save_user_turn(engine=engine, key="k1", text="It starts at 15:00.", model_id="u")
    save_user_turn(engine=engine, key="k1", text="Something else.", model_id="u")
    assert find_user_turn(engine=engine, key="k1") == "It starts at 15:00."


@pytest.mark.integration
def test_on_postgres_the_first_reply_kept_under_a_key_wins(pg_engine: Engine) -> None:
    first_writer_wins(pg_engine)


def test_on_sqlite_the_first_reply_kept_under_a_key_wins(tmp_path: Path) -> None:
    first_writer_wins(make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}"))


def test_an_unmigrated_database_is_a_store_error_and_the_cache_a_miss(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bare.sqlite'}"
    with pytest.raises(StoreError, match="user-turn cache"):
        find_user_turn(engine=make_engine(url), key="k1")
    cache = DbTurnCache(url)
    assert anyio.run(cache.get, "k1") is None
    anyio.run(cache.put, "k1", "text", "u")  # logged, never raised


def secret_is_masked(engine: Engine) -> None:
    init_db(engine)
    remember_secret("sk-endpoint-key-1234")
    said = "My key is sk-endpoint-key-1234, as Bearer sk-endpoint-key-1234 says."
    save_user_turn(engine=engine, key="k2", text=said, model_id="u")
    kept = find_user_turn(engine=engine, key="k2")
    assert kept == "My key is ***, as Bearer *** says."


@pytest.mark.integration
def test_on_postgres_a_secret_the_user_model_repeated_is_kept_masked(pg_engine: Engine) -> None:
    secret_is_masked(pg_engine)


def test_on_sqlite_a_secret_the_user_model_repeated_is_kept_masked(tmp_path: Path) -> None:
    secret_is_masked(make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}"))
