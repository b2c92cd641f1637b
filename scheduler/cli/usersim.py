"""`farm usersim freeze`: a sweep's recorded simulated users, frozen into a suite."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from mcp_farm.scheduler.cli.common import (
    DataDirOption,
    DbOption,
    console,
    engine_from,
    settings_from,
)

usersim_app = typer.Typer(no_args_is_help=True, help="Simulated users.")


@usersim_app.command("freeze")
def freeze(
    sweep_id: Annotated[str, typer.Argument(help="The recorded sweep whose users to freeze")],
    out: Annotated[Path, typer.Option("--out", help="The suite file to write (YAML)")],
    scenario: Annotated[
        list[str] | None,
        typer.Option("--scenario", help="Only this scenario id (repeatable); default: all"),
    ] = None,
    repetition: Annotated[
        int | None,
        typer.Option(help="Freeze this repetition's conversation; default: the lowest recorded"),
    ] = None,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Write a suite whose scenarios replay the user messages a simulated user sent in SWEEP_ID
    (one conversation per scenario, ids and versions kept), to run against another agent with
    no user model: `scenarios: {suites: [OUT]}`. `farm compare LIVE FROZEN --by
    config,scenario` then shows the user's effect (docs/simulated-user.md)."""
    import yaml

    from mcp_farm.scheduler.submission.freeze import frozen_suite, recorded

    engine = engine_from(settings_from(db, data_dir))
    found = recorded(engine, sweep_id, scenario or [], repetition)
    suite = frozen_suite(out.stem, sweep_id, found)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(suite, sort_keys=False, allow_unicode=True), encoding="utf-8")
    for conv in found:
        console.print(
            f"{escape(conv.scenario_id)}: {len(conv.messages)} user message(s) after the "
            f"opening, from trial {conv.trial_id[:12]} (repetition {conv.repetition})"
        )
    console.print(f"wrote {escape(str(out))}: {len(found)} frozen scenario(s)")
