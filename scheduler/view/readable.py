"""Whether the explorer can read the results database: it is there, it has the farm's tables,
at this farm's schema version. Said in one line; nothing is created or migrated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_farm.scheduler.view.queries import read_only
from mcp_farm.schema import FarmError, mask_url
from mcp_farm.schema.db import (
    SCHEMA_VERSION,
    make_engine,
    missing_sqlite_file,
    require_latest,
    schema_version,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


def no_tables(url: str) -> FarmError:
    """What to say of a database without the farm's tables (or, for SQLite, without a file)."""
    return FarmError(
        f"no sweep recorded in {mask_url(url)}: it has no farm tables yet; run a sweep "
        "(`farm run SWEEP.yaml`), or create them with `farm db init`"
    )


def require_readable(engine: Engine, url: str) -> None:
    """Raise a FarmError saying no sweep is recorded, or a StoreError naming `farm db init` (as workers say it), unless
    the database is at this farm's schema version."""
    found = schema_version(engine)
    if found == 0:
        raise no_tables(url)
    if found < SCHEMA_VERSION:
        require_latest(engine, url)


def open_reader(url: str) -> Engine:
    """The database at `url`, opened read only, once it is known to be readable; a SQLite
    file that is not there is said so, not created."""
    if missing_sqlite_file(url):
        raise no_tables(url)
    engine = read_only(make_engine(url))
    require_readable(engine, url)
    return engine


def unreadable(engine: Engine) -> str | None:
    """Why the explorer cannot read `engine`'s database (for a web page), or None when it can."""
    url = engine.url.render_as_string(hide_password=False)
    try:
        require_readable(engine, url)
    except FarmError as exc:
        return str(exc)
    return None
