"""Engine and session helpers for SQLite (embedded) and PostgreSQL (distributed)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError
from sqlmodel import Session, create_engine

from mcp_farm.schema.db.migrate import migrate
from mcp_farm.schema.errors import StoreError
from mcp_farm.schema.redact import mask_url, remember_secret


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # Several writer processes share one file: WAL lets readers and a writer overlap,
    # and the busy timeout makes a writer wait instead of failing on a held lock.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def make_engine(url: str, pool_size: int = 5, *, pre_ping: bool = True) -> Engine:
    """An engine for `sqlite:///…` or `postgresql+psycopg://…`; creates a SQLite file's folder.
    `pool_size`: PostgreSQL connections kept open (a process running many trials at once
    needs one per trial, or its threads queue for a connection). `pre_ping`: test each
    PostgreSQL connection as it leaves the pool (a round trip), so one the server dropped is
    replaced before use; callers that retry a failed step anyway may do without."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreError(f"not a database URL: {mask_url(url)!r}") from None
    remember_secret(parsed.password if isinstance(parsed.password, str) else None)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if parsed.get_backend_name() == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        return create_engine(parsed, pool_pre_ping=pre_ping, pool_size=pool_size, max_overflow=10)
    raise StoreError(
        f"unsupported database {parsed.get_backend_name()!r}: use sqlite or postgresql"
    )


def missing_sqlite_file(url: str) -> bool:
    """Whether `url` names a SQLite file that is not there (opening it would create it)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return False  # make_engine names the bad URL
    name = parsed.database
    return (
        parsed.get_backend_name() == "sqlite"
        and bool(name)
        and name != ":memory:"
        and not Path(str(name)).exists()
    )


def dialect_insert(dialect: str) -> Any:
    """The INSERT construct of `dialect` (sqlite or postgresql), which knows ON CONFLICT."""
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


def upsert(engine: Engine, table: Any, values: dict[str, Any], key: str) -> Any:
    """INSERT `values`, or on a clash of primary key `key` overwrite every other column."""
    stmt = dialect_insert(engine.dialect.name)(table).values(**values)
    return stmt.on_conflict_do_update(
        index_elements=[key], set_={k: v for k, v in values.items() if k != key}
    )


def init_db(engine: Engine) -> None:
    """Create the tables, or migrate an existing database to the latest schema."""
    migrate(engine)


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session that commits on success and rolls back on error."""
    with Session(engine) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
