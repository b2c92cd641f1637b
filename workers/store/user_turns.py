"""The cache of simulated users' turns in the results database: one row per user input, read
before the user model is asked and written after it answered (docs/simulated-user.md)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from mcp_farm.schema import StoreError
from mcp_farm.schema.db import UserTurnRow, dialect_insert, session_scope
from mcp_farm.workers.store.results import storable


def find_user_turn(*, engine: Engine, key: str) -> str | None:
    """The cached reply for `key`, or None; database trouble is a StoreError."""
    try:
        with session_scope(engine) as session:
            row = session.get(UserTurnRow, key)
            return None if row is None else row.text
    except SQLAlchemyError as exc:
        raise StoreError(f"could not read the user-turn cache: {exc}") from exc


def save_user_turn(*, engine: Engine, key: str, text: str, model_id: str) -> None:
    """Keep a reply under `key`; the first writer wins (two workers that raced to the same
    input got the same reply at temperature 0, and the cache must never change under a
    reader). The text follows the store's one text rule, as every stored text does: a secret
    the farm knows (an endpoint key the user model repeated) is kept as `***`, so a later hit
    replays the masked message."""
    values = {
        "key": key,
        "text": storable(text),
        "model_id": model_id,
        "created_at": datetime.now(UTC),
    }
    stmt = dialect_insert(engine.dialect.name)(UserTurnRow).values(**values)
    try:
        with engine.begin() as conn:
            conn.execute(stmt.on_conflict_do_nothing(index_elements=["key"]))
    except SQLAlchemyError as exc:
        raise StoreError(f"could not write the user-turn cache: {exc}") from exc
