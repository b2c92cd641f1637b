"""What every `farm` command shares: the console, common options, settings and engine."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from mcp_farm.schema import Settings, SweepSpec

console = Console()

GATE_FAILED = 1
"""Exit status of a command whose gate failed: a scorecard gate, a regression, the anchor gate."""

PLAIN_WIDTH = 10_000
"""The console's width when stdout is not a terminal and COLUMNS is unset: wide enough that no
table is cut or folded. Rich pads nothing to this width; a table stays its natural size."""


def fit_output(target: Console, environ: Mapping[str, str]) -> None:
    """Give `target` a width that suits where its output goes; run before every command.

    A terminal keeps Rich's own choice (its size, or COLUMNS). Anything else (a CI log, a pipe,
    `nohup`) would get Rich's fallback of 80 columns, which folds and cuts tables into a log
    nobody can read, so it gets COLUMNS when that is set and PLAIN_WIDTH when not.
    """
    if target.is_terminal:
        return
    columns = environ.get("COLUMNS", "").strip()
    target.width = int(columns) if columns.isdigit() and int(columns) > 0 else PLAIN_WIDTH


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

PreflightOption = Annotated[
    bool | None,
    typer.Option(
        "--preflight/--no-preflight",
        help="Check that every openai model's endpoint answers and serves the model before "
        "anything is recorded; --no-preflight for endpoints only the workers can reach "
        "[env: FARM_PREFLIGHT; default: on]",
        show_default=False,
    ),
]


def settings_from(
    db: str | None = None, data_dir: Path | None = None, broker: str | None = None
) -> Settings:
    """The process settings, with what the command line gave on top."""
    from mcp_farm.schema import get_settings

    updates: dict[str, object] = {}
    if db:
        updates["database_url"] = db
    if data_dir:
        updates["data_dir"] = data_dir
    if broker:
        updates["broker_url"] = broker
    return get_settings().model_copy(update=updates)


def engine_from(settings: Settings, *, migrate: bool = True) -> Engine:
    from mcp_farm.schema.db import init_db, make_engine

    engine = make_engine(settings.resolved_database_url())
    if migrate:
        init_db(engine)
    return engine


def preflight(sweep: SweepSpec, settings: Settings, enabled: bool | None) -> None:
    """Check the sweep's model endpoints (unless turned off); print what could not be checked.

    Raises PreflightError, before anything is recorded, when a model cannot be served.
    """
    from mcp_farm.scheduler.submission.preflight import check_endpoints, openai_targets

    if not (settings.preflight if enabled is None else enabled):
        return
    targets = openai_targets(sweep)
    if not targets:
        return
    # API keys are looked up here, at the process edge, and only sent to the endpoint.
    notes = check_endpoints(targets, timeout_s=settings.preflight_timeout_s, env=os.environ)
    for note in notes:
        console.print(f"[yellow]warning:[/yellow] {escape(note)}", highlight=False)


def print_replay_note(engine: Engine, sweep_id: str, out: Console) -> None:
    """Say which sweep a replay replays, and that it measures the servers; nothing for a sweep
    that replays nothing."""
    from mcp_farm.scheduler.submission.queries import sweep_spec_json
    from mcp_farm.scheduler.submission.replay import replay_note

    stored = sweep_spec_json(engine=engine, sweep_id=sweep_id)
    note = None if stored is None else replay_note(stored)
    if note:
        out.print(f"[cyan]{escape(note)}[/cyan]", highlight=False)
