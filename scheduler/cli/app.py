"""The `farm` command line."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from mcp_farm.scheduler.cli import (
    explore as cli_explore,
)
from mcp_farm.scheduler.cli import (
    nodes as cli_nodes,
)
from mcp_farm.scheduler.cli import (
    report as cli_report,
)
from mcp_farm.scheduler.cli.anchors import anchors_app
from mcp_farm.scheduler.cli.answers import answers_app
from mcp_farm.scheduler.cli.common import (
    DataDirOption,
    DbOption,
    PreflightOption,
    UserCheckOption,
    calibrate_user_model,
    console,
    engine_from,
    fit_output,
    preflight,
    reflow_help,
    settings_from,
)
from mcp_farm.scheduler.cli.replay import replay
from mcp_farm.scheduler.cli.rescore import rescore
from mcp_farm.scheduler.cli.scenarios import scenarios_app
from mcp_farm.scheduler.cli.sweep import sweep_app
from mcp_farm.scheduler.cli.users import users_app

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

INFRA_ONLY = 1
"""`farm run`'s exit status when some configuration measured nothing (all infra errors)."""
HARNESS_ERROR = 1
"""`farm run`'s exit status when any trial hit a bug in the farm itself (`harness_error`)."""

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="An evaluation farm for MCP tool-calling reliability.",
)
db_app = typer.Typer(no_args_is_help=True, help="The results database.")
app.add_typer(db_app, name="db")
app.add_typer(sweep_app, name="sweep")
app.add_typer(scenarios_app, name="scenarios")
app.add_typer(anchors_app, name="anchors")
app.add_typer(answers_app, name="answers")
app.add_typer(users_app, name="users")
app.command()(rescore)
app.command()(replay)
cli_nodes.register(app)
cli_report.register(app)
cli_explore.register(app)


@app.callback()
def _before_any_command() -> None:
    # Sized here, once stdout is known: full-width tables when it is a log file or a pipe.
    fit_output(console, os.environ)


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
    check: PreflightOption = None,
    user_check: UserCheckOption = None,
    capture: Annotated[
        Path | None,
        typer.Option(
            help="Record every MCP exchange of the trials run now into cassettes in this "
            "folder, one file per server, to serve later with `replay:` [env: FARM_CAPTURE_DIR]",
        ),
    ] = None,
) -> None:
    """Run a sweep embedded, in this process, and print its scorecard.

    Exits 2 before recording anything when a model endpoint is unreachable or does not serve
    the model, a local model cannot be loaded here, an agent's command is not found here, or a
    replay target's recorded sweep lacks a trial to replay, and 1 when every trial of some
    model × prompt configuration ended as an infrastructure error, or when any trial hit a bug
    in the farm itself (harness_error).
    """
    from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
    from mcp_farm.scheduler.scorecard.aggregate import scorecard_of
    from mcp_farm.scheduler.submission.embedded import run_embedded
    from mcp_farm.scheduler.submission.expand import expand, load_sweep, with_endpoint
    from mcp_farm.scheduler.submission.preflight import PreflightError, local_problems
    from mcp_farm.scheduler.submission.replay import resolve_replays
    from mcp_farm.scheduler.submission.submit import plan_summary
    from mcp_farm.schema import mask_url

    settings = settings_from(db, data_dir)
    if capture:
        settings = settings.model_copy(update={"capture_dir": capture.resolve()})
    sweep = load_sweep(sweep_file)
    if endpoint:
        sweep = with_endpoint(sweep, endpoint, endpoint_model, "cpu")
    plan = expand(sweep, str(sweep_file))
    missing = local_problems(plan.sweep)
    if missing:  # local models load in this process: one that cannot would fail every trial
        raise PreflightError("; ".join(missing))
    preflight(plan.sweep, settings, check, agents=True)
    calibrate_user_model(plan.sweep, settings, user_check)
    engine = engine_from(settings)
    plan = resolve_replays(plan, engine)  # a replay target's turns, or the error, come first
    console.print(f"[bold]{plan.sweep_id}[/bold]: {plan_summary(plan)}")
    console.print(f"[dim]results: {mask_url(settings.resolved_database_url())}[/dim]")
    if settings.capture_dir:
        console.print(f"[dim]capturing MCP exchanges into {settings.capture_dir}[/dim]")
    run_embedded(plan=plan, settings=settings, engine=engine, console=console, rerun=rerun)
    # The run ended with the aggregate task, which built and stored the card: print that one.
    card = scorecard_of(engine=engine, sweep_id=plan.sweep_id)
    print_scorecard(card, console)
    _fail_on_infra_only(engine, plan.sweep_id)
    if card.harness_errors():
        # The scorecard printed the red line; the exit status tells a script or CI.
        raise typer.Exit(HARNESS_ERROR)


def _fail_on_infra_only(engine: Engine, sweep_id: str) -> None:
    """Name each configuration that measured nothing, and exit 1 if there is one."""
    from mcp_farm.scheduler.scorecard.infra import infra_only

    empty = infra_only(engine=engine, sweep_id=sweep_id)
    if not empty:
        return
    for found in empty:
        console.print(f"[bold red]{escape(found.warning())}[/bold red]", highlight=False)
    console.print(
        "Nothing was measured for them. Fix the cause (start the model server, check the "
        "endpoint and its key), then run the same command again: it runs only the trials "
        "that have no measurement yet."
    )
    raise typer.Exit(INFRA_ONLY)


@db_app.command("init")
def db_init(db: DbOption = None, data_dir: DataDirOption = None) -> None:
    """Create the results tables, or migrate them to this version (safe to run again)."""
    from mcp_farm.schema import mask_url
    from mcp_farm.schema.db import text_search_ready

    settings = settings_from(db, data_dir)
    engine = engine_from(settings)
    console.print(f"tables ready in {mask_url(settings.resolved_database_url())}")
    note = text_search_ready(engine)
    if note is not None:
        console.print(f"[yellow]{escape(note)}[/yellow]", highlight=False, soft_wrap=True)


def main() -> None:
    """Entry point: deliberate errors print one line and exit 2, with no traceback."""
    from mcp_farm.scheduler.report.visible import visible
    from mcp_farm.schema import FarmError, mask_secrets

    try:
        app()
    except FarmError as exc:
        # Escaped: a message quotes the user's values (a pattern like `a[/]b`), never markup,
        # and what they hide is shown. One line however narrow the terminal or the pipe: a
        # reader's terminal wraps it at words, a script greps it whole.
        Console(stderr=True).print(
            f"[bold red]error:[/bold red] {escape(visible(mask_secrets(str(exc))))}",
            highlight=False,
            soft_wrap=True,
        )
        sys.exit(2)


# Last, once every command is registered: help reads as paragraphs at any width.
reflow_help(app)

if __name__ == "__main__":
    main()
