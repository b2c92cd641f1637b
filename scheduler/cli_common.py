"""What every `farm` command shares: the console, common options, settings and engine."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from sqlalchemy.engine import Engine

from schema import Settings, get_settings, init_db, make_engine

console = Console()

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Results database URL [env: FARM_DATABASE_URL; default: SQLite in FARM_DATA_DIR]",
    ),
]
DataDirOption = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Where SQLite and trial sandboxes live [env: FARM_DATA_DIR]"),
]
BrokerOption = Annotated[
    str | None,
    typer.Option("--broker", help="Celery broker URL [env: FARM_BROKER_URL]"),
]


def settings_from(
    db: str | None = None, data_dir: Path | None = None, broker: str | None = None
) -> Settings:
    """The process settings, with what the command line gave on top."""
    updates: dict[str, object] = {}
    if db:
        updates["database_url"] = db
    if data_dir:
        updates["data_dir"] = data_dir
    if broker:
        updates["broker_url"] = broker
    return get_settings().model_copy(update=updates)


def engine_from(settings: Settings, *, migrate: bool = True) -> Engine:
    engine = make_engine(settings.resolved_database_url())
    if migrate:
        init_db(engine)
    return engine
