"""What every `farm` command shares: the console, common options, settings and engine."""

from __future__ import annotations

import inspect
import os
import re
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
        help="Check that every openai model's endpoint answers and serves the model (and, for "
        "`farm run`, that every agent's command is here) before anything is recorded; "
        "--no-preflight for endpoints only the workers can reach "
        "[env: FARM_PREFLIGHT; default: on]",
        show_default=False,
    ),
]


UserCheckOption = Annotated[
    bool | None,
    typer.Option(
        "--user-check/--no-user-check",
        help="Ask a simulated user's model a few canned agent questions first and stop when it "
        "does not play the user [env: FARM_USER_CHECK; default: on]",
        show_default=False,
    ),
]


def settings_from(
    db: str | None = None, data_dir: Path | None = None, broker: str | None = None
) -> Settings:
    """The process settings, with what the command line gave on top."""
    from mcp_farm.schema import absolute_folder, get_settings

    updates: dict[str, object] = {}
    if db:
        updates["database_url"] = db
    if data_dir:
        # model_copy skips the settings' validators: made absolute here as they make it.
        updates["data_dir"] = absolute_folder(data_dir)
    if broker:
        updates["broker_url"] = broker
    return get_settings().model_copy(update=updates)


def engine_from(settings: Settings, *, migrate: bool = True) -> Engine:
    from mcp_farm.schema.db import init_db, make_engine

    engine = make_engine(settings.resolved_database_url())
    if migrate:
        init_db(engine)
    return engine


def preflight(
    sweep: SweepSpec, settings: Settings, enabled: bool | None, *, agents: bool = False
) -> None:
    """Check the sweep's model endpoints (unless turned off); print what could not be checked.
    With `agents` (a run in this process), also that each agent target's command starts here;
    a submitted sweep's agents run on the workers, which check their own.

    Raises PreflightError, before anything is recorded, when a model cannot be served.
    """
    from mcp_farm.scheduler.submission.preflight import (
        check_agents_here,
        check_endpoints,
        openai_targets,
    )

    if not (settings.preflight if enabled is None else enabled):
        return
    if agents:
        check_agents_here(sweep, os.environ)
    targets = openai_targets(sweep)
    if not targets:
        return
    # API keys are looked up here, at the process edge, and only sent to the endpoint.
    notes = check_endpoints(targets, timeout_s=settings.preflight_timeout_s, env=os.environ)
    for note in notes:
        console.print(f"[yellow]warning:[/yellow] {escape(note)}", highlight=False)


def calibrate_user_model(sweep: SweepSpec, settings: Settings, enabled: bool | None) -> None:
    """Ask the sweep's user model the calibration's questions (unless turned off), before
    anything is recorded; one line either way. Raises PreflightError when it fails."""
    from mcp_farm.scheduler.submission.preflight import PreflightError
    from mcp_farm.schema import load_task
    from mcp_farm.schema.tasks.messages import (
        UserCalibrationRequest,
        UserCalibrationResult,
        read_result,
    )

    if sweep.user_model is None or not (settings.user_check if enabled is None else enabled):
        return
    request = UserCalibrationRequest(user=sweep.user_model)
    with console.status(f"calibrating the simulated user ({sweep.user_model.model.id})…"):
        found = load_task("farm.calibrate_user")(request, settings)
    result = read_result("farm.calibrate_user", found, UserCalibrationResult)
    if not result.passed:
        raise PreflightError(
            f"{result.line()}: pick another user model, or pass --no-user-check "
            "(FARM_USER_CHECK=false) to run it anyway"
        )
    console.print(f"[dim]{escape(result.line())}[/dim]", highlight=False)


def print_replay_note(engine: Engine, sweep_id: str, out: Console) -> None:
    """Say which sweep a replay replays, and that it measures the servers; nothing for a sweep
    that replays nothing."""
    from mcp_farm.scheduler.submission.queries import sweep_spec_json
    from mcp_farm.scheduler.submission.replay import replay_note

    stored = sweep_spec_json(engine=engine, sweep_id=sweep_id)
    note = None if stored is None else replay_note(stored)
    if note:
        out.print(f"[cyan]{escape(note)}[/cyan]", highlight=False)


# Help that reads as paragraphs at any terminal width: the commands' docstrings are wrapped at
# 100 columns in the source, and typer keeps those breaks in every paragraph after the first,
# so an 80-column terminal wrapped them again mid-sentence. Every line break inside a
# paragraph is joined before typer reads the help; blank lines, list items and indented
# blocks keep theirs.
KEPT = re.compile("^(?:\\s|[-*•]\\s|\\d+[.)]\\s|\x08)")
"""A line that starts a list item or an indented block, or typer's `\\b` (no rewrap): its
break before it is kept."""


def reflowed(text: str) -> str:
    """The text with each paragraph on one line (list items and indented lines apart)."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    out = []
    for paragraph in paragraphs:
        lines = paragraph.split("\n")
        joined = [lines[0]]
        for line in lines[1:]:
            if KEPT.match(line) or joined[-1].startswith("\x08"):
                joined.append(line)
            else:
                joined[-1] = f"{joined[-1].rstrip()} {line.strip()}"
        out.append("\n".join(joined))
    return "\n\n".join(out)


def _help(explicit: object, callback: object) -> str | None:
    """The help typer would show: the one given, else the callback's docstring, reflowed."""
    text = explicit if isinstance(explicit, str) else inspect.getdoc(callback) if callback else None
    return reflowed(text) if text else None


def reflow_help(app: typer.Typer) -> None:
    """Reflow the help of every command and group of `app`, in place (call it once every
    command is registered)."""
    for command in app.registered_commands:
        command.help = _help(command.help, command.callback) or command.help
    if app.registered_callback is not None:
        info = app.registered_callback
        info.help = _help(info.help, info.callback) or info.help
    if isinstance(app.info.help, str):
        app.info.help = reflowed(app.info.help)
    for group in app.registered_groups:
        if isinstance(group.help, str):
            group.help = reflowed(group.help)
        if group.typer_instance is not None:
            reflow_help(group.typer_instance)
