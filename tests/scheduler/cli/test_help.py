"""Every `farm` command answers --help (help text is Rich markup: a stray `[/X]` crashes it)."""

from __future__ import annotations

import typer
from typer.main import get_command
from typer.testing import CliRunner

from mcp_farm.scheduler.cli.app import app


def _paths(group: typer.Typer) -> list[list[str]]:
    command = get_command(group)
    found: list[list[str]] = [[]]

    def walk(cmd: object, prefix: list[str]) -> None:
        for name, sub in getattr(cmd, "commands", {}).items():
            found.append([*prefix, name])
            walk(sub, [*prefix, name])

    walk(command, [])
    return found


def test_help_of_every_command_works() -> None:
    paths = _paths(app)
    assert ["compare"] in paths and ["anchors", "verify"] in paths and ["rescore"] in paths
    for path in paths:
        result = CliRunner().invoke(app, [*path, "--help"])
        assert result.exit_code == 0, f"farm {' '.join(path)} --help: {result.output}"
        assert "Usage" in result.output
