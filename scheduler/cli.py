"""The `farm` command line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlmodel import col

from scheduler.embedded import run_embedded
from scheduler.expand import expand, load_sweep, with_endpoint
from scheduler.render import print_scorecard
from scheduler.scorecard import build_scorecard
from schema import FarmError, Settings, SweepRow, get_settings, init_db, make_engine, session_scope

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="An evaluation farm for MCP tool-calling reliability.",
)
db_app = typer.Typer(no_args_is_help=True, help="The results database.")
app.add_typer(db_app, name="db")
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


def _settings(db: str | None, data_dir: Path | None = None) -> Settings:
    updates: dict[str, object] = {}
    if db:
        updates["database_url"] = db
    if data_dir:
        updates["data_dir"] = data_dir
    return get_settings().model_copy(update=updates)


def _engine(settings: Settings) -> Engine:
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    return engine


@app.command()
def run(
    sweep_file: Annotated[
        Path, typer.Argument(help="A sweep YAML, e.g. scenarios/sweeps/quickstart.yaml")
    ],
    db: DbOption = None,
    data_dir: DataDirOption = None,
    endpoint: Annotated[
        str | None,
        typer.Option(help="Serve every trial from this OpenAI-compatible endpoint (…/v1) instead"),
    ] = None,
    endpoint_model: Annotated[str, typer.Option(help="Model name at --endpoint")] = "default",
    rerun: Annotated[bool, typer.Option(help="Run trials again even if already recorded")] = False,
) -> None:
    """Run a sweep embedded, in this process, and print its scorecard."""
    settings = _settings(db, data_dir)
    sweep = load_sweep(sweep_file)
    if endpoint:
        sweep = with_endpoint(sweep, endpoint, endpoint_model, "cpu")
    plan = expand(sweep, str(sweep_file))
    engine = _engine(settings)
    console.print(
        f"[bold]{plan.sweep_id}[/bold]: {len(sweep.models)} model(s) × "
        f"{len(sweep.prompts)} prompt config(s) × "
        f"{len(plan.trials) // (len(sweep.models) * len(sweep.prompts) * sweep.repetitions)}"
        f" scenario(s) × {sweep.repetitions} repetition(s) = {len(plan.trials)} trials"
    )
    console.print(f"[dim]results: {settings.resolved_database_url()}[/dim]")
    run_embedded(plan=plan, settings=settings, engine=engine, console=console, rerun=rerun)
    print_scorecard(build_scorecard(engine=engine, sweep_id=plan.sweep_id), console)


@app.command()
def report(
    sweep_id: Annotated[str | None, typer.Argument(help="Sweep id; default: the latest")] = None,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Print the scorecard of a recorded sweep."""
    engine = _engine(_settings(db, data_dir))
    with session_scope(engine) as session:
        if sweep_id is None:
            row = session.execute(
                select(col(SweepRow.sweep_id)).order_by(col(SweepRow.created_at).desc())
            ).first()
            if row is None:
                raise FarmError("no sweep recorded yet: run one with `farm run SWEEP.yaml`")
            sweep_id = row[0]
        elif session.get(SweepRow, sweep_id) is None:
            raise FarmError(f"no sweep {sweep_id!r} in this database")
    print_scorecard(build_scorecard(engine=engine, sweep_id=sweep_id), console)


@db_app.command("init")
def db_init(db: DbOption = None, data_dir: DataDirOption = None) -> None:
    """Create the results tables (safe to run again)."""
    settings = _settings(db, data_dir)
    _engine(settings)
    console.print(f"tables ready in {settings.resolved_database_url()}")


def main() -> None:
    """Entry point: deliberate errors print one line and exit 2, with no traceback."""
    try:
        app()
    except FarmError as exc:
        Console(stderr=True).print(f"[bold red]error:[/bold red] {exc}", highlight=False)
        sys.exit(2)


if __name__ == "__main__":
    main()
