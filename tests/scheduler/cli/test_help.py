"""Every `farm` command answers --help (help text is Rich markup: a stray `[/X]` crashes it)."""

from __future__ import annotations

import itertools

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


def _prose(output: str) -> list[list[str]]:
    """The paragraphs of a rendered help's description (between the usage line and the first
    box), each as its rendered lines."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "Usage:" in line) + 1
    end = next((i for i, line in enumerate(lines) if line.lstrip().startswith("╭")), len(lines))
    paragraphs: list[list[str]] = [[]]
    for line in lines[start:end]:
        if line.strip():
            paragraphs[-1].append(line.strip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return [p for p in paragraphs if p]


def _broken_early(paragraph: list[str], width: int) -> list[str]:
    """Lines ended before the width although the next line's first word would have fit: a
    break the help text itself holds, not the terminal's wrap."""
    room = width - 2  # the margin rich keeps on each side
    return [
        line
        for line, after in itertools.pairwise(paragraph)
        if not after.startswith(("-", "*", "•")) and len(line) + 1 + len(after.split()[0]) <= room
    ]


def test_every_commands_help_reads_as_paragraphs_at_80_and_200_columns() -> None:
    # Issue 36, item 25: docstrings wrapped at 100 columns in the source kept those breaks, so
    # an 80-column terminal wrapped every line again mid-sentence.
    early: dict[str, list[str]] = {}
    long_paragraphs = 0
    for path in _paths(app):
        for width in (80, 200):
            result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(width)})
            assert result.exit_code == 0, result.output
            for paragraph in _prose(result.output):
                long_paragraphs += width == 200 and len(paragraph[0]) > 120
                if found := _broken_early(paragraph, width):
                    early[f"farm {' '.join(path)} --help at {width}"] = found
    assert early == {}
    assert long_paragraphs > 5  # at 200 columns paragraphs run past the source's 100
