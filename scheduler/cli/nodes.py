"""`farm worker`, `farm workers`, `farm flower`: enrol lab machines and watch the farm."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from importlib.metadata import entry_points
from importlib.util import find_spec
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcp_farm.scheduler.cli.common import (
    BrokerOption,
    DbOption,
    console,
    engine_from,
    settings_from,
)

if TYPE_CHECKING:
    from mcp_farm.schema import Settings

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _start_worker() -> Any:
    # The worker lives in `workers`, which the scheduler never imports: find it by name.
    from mcp_farm.schema import FarmError

    for ep in entry_points(group="farm.worker"):
        if ep.name == "start":
            return ep.load()
    raise FarmError("the worker is not installed: reinstall the project (`pip install -e .`)")


def worker(
    tags: Annotated[str, typer.Option(help="Hardware tags this machine serves, e.g. igpu,cpu")],
    concurrency: Annotated[int, typer.Option(min=1, help="Trials at once on this node")] = 1,
    name: Annotated[str | None, typer.Option(help="Node name; default farm-<tags>@<host>")] = None,
    control: Annotated[
        bool, typer.Option(help="Also consume the control queue (aggregation)")
    ] = False,
    endpoint: Annotated[
        list[str] | None,
        typer.Option(help="An OpenAI-compatible endpoint this box serves (repeatable)"),
    ] = None,
    pool: Annotated[
        str,
        typer.Option(
            help="Celery pool: prefork (a process per trial), threads (all trials in one "
            "process, many sessions on one event loop: for batching GPU endpoints) or solo"
        ),
    ] = "prefork",
    loglevel: Annotated[
        str,
        typer.Option(
            help="Celery's log level: INFO logs every task received and done; WARNING only "
            "what went wrong (less CPU on a busy worker)"
        ),
    ] = "INFO",
    db: DbOption = None,
    broker: BrokerOption = None,
) -> None:
    """Enrol this machine as a worker node and run trials from its tags' queues."""
    from mcp_farm.schema import FarmError

    settings = settings_from(db, broker=broker)
    if loglevel.upper() not in LOG_LEVELS:
        raise FarmError(f"--loglevel {loglevel!r}: use one of {', '.join(LOG_LEVELS)}")
    _start_worker()(
        settings,
        tags=[t.strip() for t in tags.split(",") if t.strip()],
        concurrency=concurrency,
        name=name,
        control=control,
        endpoints=endpoint or [],
        pool=pool,
        loglevel=loglevel.upper(),
    )


def workers(db: DbOption = None) -> None:
    """List the worker nodes: tags, last heartbeat, trials done."""
    from mcp_farm.scheduler.operations.nodes import list_nodes
    from mcp_farm.scheduler.report.terminal.ops import nodes_table

    settings = settings_from(db)
    nodes = list_nodes(engine=engine_from(settings), heartbeat_s=settings.heartbeat_s)
    if not nodes:
        console.print("no worker has enrolled yet: start one with `farm worker --tags cpu`")
        return
    console.print(nodes_table(nodes))


def flower_command(
    settings: Settings, *, port: int, address: str, env: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that start Flower on the farm's broker.

    Secrets travel in the environment, never in argv, where `ps` shows them to every user of
    the machine: Flower reads its options from `FLOWER_*` variables (FLOWER_BASIC_AUTH) and
    Celery its broker from CELERY_BROKER_URL.
    """
    from mcp_farm.schema import FarmError

    password = settings.flower_password
    if not password:
        raise FarmError("set FARM_FLOWER_PASSWORD (and optionally FARM_FLOWER_USER) first")
    if "," in password or "," in settings.flower_user or ":" in settings.flower_user:
        # Flower splits FLOWER_BASIC_AUTH on commas (several users) and user from password at
        # the first colon.
        raise FarmError(
            "FARM_FLOWER_USER must not contain `,` or `:`, nor FARM_FLOWER_PASSWORD `,`: "
            "choose others"
        )
    argv = [
        sys.executable,
        "-m",
        "celery",
        "flower",
        f"--port={port}",
        f"--address={address}",
        "--purge_offline_workers=600",
    ]
    child = dict(env) | {
        "FLOWER_BASIC_AUTH": f"{settings.flower_user}:{password}",
        "CELERY_BROKER_URL": settings.broker_url,
    }
    # Flower needs no second copy of the password; and Celery's CLI would take a stray
    # BROKER_URL over the farm's broker.
    child.pop("FARM_FLOWER_PASSWORD", None)
    child.pop("BROKER_URL", None)
    return argv, child


def flower(
    port: Annotated[int, typer.Option(help="HTTP port")] = 5555,
    address: Annotated[str, typer.Option(help="Address to listen on")] = "127.0.0.1",
    broker: BrokerOption = None,
) -> None:
    """Start Flower on the farm's broker, with basic auth from FARM_FLOWER_USER/PASSWORD."""
    from mcp_farm.schema import FarmError, mask_url

    settings = settings_from(broker=broker)
    if find_spec("flower") is None:
        raise FarmError("Flower is not installed: `pip install -e '.[head]'` on the head node")
    argv, env = flower_command(settings, port=port, address=address, env=os.environ)
    console.print(
        f"Flower on http://{address}:{port} (user {settings.flower_user}), "
        f"broker {mask_url(settings.broker_url)}"
    )
    os.execve(sys.executable, argv, env)


def register(app: typer.Typer) -> None:
    app.command()(worker)
    app.command()(workers)
    app.command()(flower)
