"""`farm view` (the trial explorer in a browser), `farm trials` and `farm trial show` (the same
in a terminal): find the failing trials of a sweep and read what happened."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Annotated

import typer

from mcp_farm.scheduler.cli.common import (
    DataDirOption,
    DbOption,
    console,
    settings_from,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from mcp_farm.schema import Settings

trial_app = typer.Typer(no_args_is_help=True, help="One trial: its transcript and verdicts.")


def register(app: typer.Typer) -> None:
    app.command()(view)
    app.command()(trials)
    app.add_typer(trial_app, name="trial")


def _reader(settings: Settings) -> Engine:
    """The database, opened read only and not migrated: the explorer changes nothing. One
    without the farm's tables, or at an older schema version, is refused in one line."""
    from mcp_farm.scheduler.view.readable import open_reader

    return open_reader(settings.resolved_database_url())


def view(
    host: Annotated[
        str, typer.Option(help="Address to listen on; beyond loopback needs FARM_VIEW_PASSWORD")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port; 0 picks a free one")] = 8765,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Browse sweeps, scorecards, trials and transcripts in a local web app (read only).

    Prints its URL and serves until interrupted. Listening on anything but loopback needs a
    password (FARM_VIEW_PASSWORD, user FARM_VIEW_USER, default `farm`), asked for by the browser.
    """
    import uvicorn

    from mcp_farm.scheduler.view.app import ViewError, check_bind, create_app
    from mcp_farm.scheduler.view.serving import ExplorerProtocol
    from mcp_farm.schema import mask_url, remember_secret

    settings = settings_from(db, data_dir)
    check_bind(host, settings.view_password)
    remember_secret(settings.view_password)
    engine = _reader(settings)
    app = create_app(engine, user=settings.view_user, password=settings.view_password, host=host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        raise ViewError(f"farm view cannot listen on {host}:{port}: {exc.strerror}") from None
    bound = listener.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    # The URL first, on a line of its own, so a script (or a test) can read it.
    print(f"farm view: http://{shown}:{bound}/", flush=True)
    console.print(f"[dim]results: {mask_url(settings.resolved_database_url())}[/dim]")
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="off", http=ExplorerProtocol)
    )
    server.run(sockets=[listener])


def trials(
    sweep_id: Annotated[str | None, typer.Argument(help="Sweep id; default: the latest")] = None,
    model: Annotated[str | None, typer.Option(help="Model id")] = None,
    config: Annotated[
        str | None, typer.Option(help="Configuration label: PROMPT or PROMPT+TOOLSET")
    ] = None,
    scenario: Annotated[str | None, typer.Option(help="Scenario id")] = None,
    tier: Annotated[str | None, typer.Option(help="simple, moderate or complex")] = None,
    tool: Annotated[str | None, typer.Option(help="A tool the scenario expects")] = None,
    wording: Annotated[str | None, typer.Option(help="verbatim or paraphrased")] = None,
    outcome: Annotated[str | None, typer.Option(help="An outcome, e.g. wrong_tool")] = None,
    status: Annotated[str | None, typer.Option(help="pending, running, done, cancelled")] = None,
    first_try: Annotated[str | None, typer.Option(help="yes or no")] = None,
    route: Annotated[str | None, typer.Option(help="The route taken")] = None,
    left_cassette: Annotated[str | None, typer.Option(help="yes or no")] = None,
    other_path: Annotated[
        str | None,
        typer.Option(help="yes or no: state passed while calls did not (trials with probes)"),
    ] = None,
    graded: Annotated[
        str | None, typer.Option(help="yes: the trials the scorecard's rates count")
    ] = None,
    scoring: Annotated[str | None, typer.Option(help="Scored in this scoring pass")] = None,
    search: Annotated[str | None, typer.Option(help="Text in the grader's detail")] = None,
    sort: Annotated[str, typer.Option(help="scenario, slowest, fastest or newest")] = "scenario",
    page: Annotated[int, typer.Option(help="Page number (50 trials a page)")] = 1,
    after: Annotated[
        str | None,
        typer.Option(help="Start after this trial id (each page prints the next page's)"),
    ] = None,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """List a sweep's trials, filtered as `farm view` filters them; ids for `farm trial show`."""
    from mcp_farm.scheduler.operations.progress import latest_sweep_id
    from mcp_farm.scheduler.operations.queries import check_sweep
    from mcp_farm.scheduler.view.filters import TrialFilter, checked_text
    from mcp_farm.scheduler.view.queries import trial_page
    from mcp_farm.scheduler.view.terminal import print_trials

    given = {
        "model": model,
        "config": config,
        "scenario": scenario,
        "tier": tier,
        "tool": tool,
        "wording": wording,
        "outcome": outcome,
        "status": status,
        "first_try": first_try,
        "route": route,
        "left_cassette": left_cassette,
        "other_path": other_path,
        "graded": graded,
        "scoring": scoring,
        "search": search,
        "sort": sort,
        "page": str(page),
        "after": after,
    }
    selection = TrialFilter.read(
        {k: v for k, v in given.items() if v is not None}, source="farm trials"
    )
    if sweep_id is not None:
        checked_text(sweep_id, name="sweep", source="farm trials")
    engine = _reader(settings_from(db, data_dir))
    sweep_id = sweep_id or latest_sweep_id(engine=engine)
    check_sweep(engine=engine, sweep_id=sweep_id)
    print_trials(trial_page(engine=engine, sweep_id=sweep_id, selection=selection), console)


@trial_app.command("show")
def show(
    trial_id: Annotated[str, typer.Argument(help="A trial id, or its first characters")],
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Print one trial: summary, verdict step by step, transcript, answer scores, provenance."""
    from mcp_farm.scheduler.view.filters import checked_text
    from mcp_farm.scheduler.view.queries import trial_ids_starting, trial_record
    from mcp_farm.scheduler.view.terminal import print_trial
    from mcp_farm.schema import FarmError

    checked_text(trial_id, name="trial", source="farm trial show")
    engine = _reader(settings_from(db, data_dir))
    record = trial_record(engine=engine, trial_id=trial_id)
    if record is None:
        found = trial_ids_starting(engine=engine, prefix=trial_id)
        if len(found) > 1:
            raise FarmError(f"{trial_id!r} starts more than one trial id: give more of it")
        record = trial_record(engine=engine, trial_id=found[0]) if found else None
    if record is None:
        raise FarmError(f"no trial {trial_id!r} in this database (see `farm trials`)")
    print_trial(record, console)
