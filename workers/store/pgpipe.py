"""PostgreSQL's share of every trial, straight through the driver: one round trip for the
claim and one for the save with its "any left?" probe.

Through SQLAlchemy the two took about 2 ms of a worker's CPU per trial and seven round trips
(the claim; BEGIN, upsert, DELETE, INSERT, COMMIT; the probe): more CPU than the MCP call they
record. Here the same statements, compiled once from the store's SQLAlchemy constructs (each
keeps one definition), go to psycopg directly. The save's transaction and the probe after it
are sent together in pipeline mode: the server still runs the probe as a statement of its own
after the COMMIT (see `mcp_farm.workers.store.results.save_trial`), only the waiting between them is gone.
SQLite, and saves that carry an answer score, take the SQLAlchemy path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

import psycopg
from sqlalchemy import Table
from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.schema import ScalarElementColumnDefault
from sqlmodel import SQLModel

from mcp_farm.schema import StoreError

IDLE = psycopg.pq.TransactionStatus.IDLE


@dataclass(frozen=True)
class Prepared:
    """One statement as the driver takes it."""

    sql: str
    fixed: dict[str, Any]
    """Values of the construct's own literals, and column defaults for an INSERT's columns
    not given (what SQLAlchemy would fill in at execution)."""
    processors: Mapping[str, Callable[[Any], Any]]
    """The column types' bind processors (timestamps are checked and put in UTC)."""

    def params(self, values: dict[str, Any]) -> dict[str, Any]:
        bound = self.fixed | values
        for name, process in self.processors.items():
            bound[name] = process(bound[name])
        return bound


def prepare(
    stmt: ClauseElement,
    dialect: Dialect,
    sample: dict[str, Any],
    *,
    columns: list[str] | None = None,
    table: Table | None = None,
) -> Prepared:
    """`stmt` compiled for the driver. `sample` names every parameter the caller will give
    (its values only shape the SQL); `columns`: an INSERT's columns; `table`: where the
    defaults of the INSERT's other columns come from."""
    compiled = cast(SQLCompiler, stmt.compile(dialect=dialect, column_keys=columns))
    expanded = compiled.construct_expanded_state(sample)
    fixed = {k: v for k, v in expanded.parameters.items() if k not in sample}
    for name, value in fixed.items():
        if value is None and table is not None and name in table.c:
            default = table.c[name].default
            if not isinstance(default, ScalarElementColumnDefault):
                raise ValueError(f"{table.name}.{name} needs a value: it has no plain default")
            fixed[name] = default.arg
    processors = {
        name: process
        for name, bind in compiled.binds.items()
        if name in expanded.parameters and (process := bind.type.bind_processor(dialect))
    }
    return Prepared(expanded.statement, fixed, processors)


@contextmanager
def driver(engine: Engine, what: str) -> Iterator[psycopg.Connection[Any]]:
    """A pooled connection's psycopg connection in autocommit mode (a transaction is spelled
    out with BEGIN and COMMIT). Database trouble becomes a StoreError; a connection the server
    dropped is discarded with the rest of the pool, as SQLAlchemy does, and the error says so
    (`mcp_farm.workers.node.tasks.patiently` then retries at once)."""
    try:
        with engine.connect() as conn:
            pg = cast(psycopg.Connection[Any], conn.connection.driver_connection)
            pg.autocommit = True
            try:
                yield pg
            except psycopg.Error as exc:
                if not (pg.broken or pg.closed):
                    raise
                conn.invalidate(exc)
                engine.pool.dispose()
                raise DBAPIError.instance(
                    None, None, exc, psycopg.Error, connection_invalidated=True
                ) from exc
            finally:
                if not (pg.broken or pg.closed):
                    if pg.info.transaction_status != IDLE:
                        pg.rollback()  # a statement failed between our BEGIN and COMMIT
                    pg.autocommit = False
    except (SQLAlchemyError, psycopg.Error) as exc:
        raise StoreError(f"could not {what}: {exc}") from exc


def claim(engine: Engine, stmt: ClauseElement, params: dict[str, Any]) -> bool:
    """Run the store's claiming UPDATE `stmt` (atomic by itself, so outside any transaction);
    whether it claimed the trial."""
    claiming = _prepared(engine.dialect, stmt, tuple(params), None)
    with driver(engine, f"claim trial {params['claim_id'][:12]}") as pg:
        return pg.execute(claiming.sql, claiming.params(params)).fetchone() is not None


@dataclass(frozen=True)
class SaveStatements:
    """The store's constructs for a save: the trial upsert, the DELETE of its tool calls (by
    `trial_id`), their INSERT, and the probe (by `sweep_id`)."""

    upsert: ClauseElement
    drop_calls: ClauseElement
    insert_calls: ClauseElement
    any_left: ClauseElement


def save(
    engine: Engine,
    stmts: SaveStatements,
    *,
    values: dict[str, Any],
    calls: list[dict[str, Any]],
    trial_id: str,
    sweep_id: str,
) -> bool:
    """Upsert the trial and replace its tool calls in one transaction, then probe whether the
    sweep has trials left, all in one round trip; return the probe's answer."""
    dialect = engine.dialect
    upsert = _prepared(dialect, stmts.upsert, tuple(values), SQLModel.metadata.tables["trial"])
    drop = _prepared(dialect, stmts.drop_calls, ("trial_id",), None)
    left = _prepared(dialect, stmts.any_left, ("sweep_id",), None)
    with driver(engine, f"save trial {trial_id[:12]}") as pg:
        with pg.pipeline():
            pg.execute("BEGIN")
            pg.execute(upsert.sql, upsert.params(values))
            pg.execute(drop.sql, drop.params({"trial_id": trial_id}))
            if calls:
                insert = _prepared(
                    dialect,
                    stmts.insert_calls,
                    tuple(calls[0]),
                    SQLModel.metadata.tables["tool_call"],
                )
                with pg.cursor() as cur:
                    cur.executemany(insert.sql, [insert.params(c) for c in calls])
            pg.execute("COMMIT")
            probe = pg.execute(left.sql, left.params({"sweep_id": sweep_id}))
        return probe.fetchone() is not None


@lru_cache(maxsize=32)
def _prepared(
    dialect: Dialect, stmt: ClauseElement, names: tuple[str, ...], table: Table | None
) -> Prepared:
    """Each statement prepared once per shape (`names`: the parameters given; `table`: the
    table an INSERT writes, whose columns `names` are)."""
    columns = list(names) if table is not None else None
    return prepare(stmt, dialect, dict.fromkeys(names, ""), columns=columns, table=table)
