"""Output that is not a terminal (a CI log, `nohup`, a pipe): whole tables, progress as lines.

Typer's CliRunner hands the command a captured stream, which is not a terminal, just as a log
file is not.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.cli.common import (
    PLAIN_WIDTH,
    fit_output,
)
from mcp_farm.scheduler.report.terminal.lines import (
    LinePacer,
    run_line,
)
from mcp_farm.scheduler.submission.embedded import model_share
from mcp_farm.workers.node.runtime import close_runtime
from tests.helpers import ideal_script

LONG_TOOL = "look_up_the_quarterly_figures_of_every_regional_office_in_the_spreadsheet"


def _suite_with_a_long_row(tmp_path: Path) -> Path:
    path = tmp_path / "wide.yaml"
    scenario = {
        "id": "wide.one-very-long-scenario-identifier",
        "version": 1,
        "tier": "simple",
        "prompt": "What were the figures?",
        "servers": ["filesystem"],
        "expect": [{"tool": LONG_TOOL}],
    }
    path.write_text(yaml.safe_dump({"suite": "wide", "scenarios": [scenario]}))
    return path


def test_a_table_row_longer_than_80_columns_is_printed_whole_when_output_is_not_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    listed = CliRunner().invoke(app, ["scenarios", "list", str(_suite_with_a_long_row(tmp_path))])
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.output.splitlines() if LONG_TOOL in line)
    # One line holds the whole row: nothing folded onto a second line or cut with an ellipsis.
    assert len(row) > 80
    assert "wide.one-very-long-scenario-identifier" in row and "filesystem" in row


def test_columns_still_decides_the_width_of_output_that_is_not_a_terminal() -> None:
    piped = Console(file=io.StringIO())
    fit_output(piped, {"COLUMNS": "132"})
    assert piped.width == 132
    fit_output(piped, {})
    assert piped.width == PLAIN_WIDTH


def test_a_terminal_keeps_the_width_rich_gives_it() -> None:
    terminal = Console(file=io.StringIO(), force_terminal=True, width=90)
    fit_output(terminal, {})
    assert terminal.width == 90


def test_farm_run_prints_a_progress_line_as_trials_finish_when_output_is_not_a_terminal(
    tmp_path: Path,
) -> None:
    scenario = next(s for s in load_suite("basic").scenarios if s.id == "fs.budget-total")
    sweep = {
        "name": "plain-progress",
        "models": [
            {"id": "ideal", "adapter": "scripted", "model": "s", "script": ideal_script(scenario)}
        ],
        "prompts": ["native", "json"],
        "scenarios": {"ids": [scenario.id]},
        "repetitions": 2,
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    try:
        done = CliRunner().invoke(app, ["run", str(path), "--data-dir", str(tmp_path / "data")])
    finally:
        close_runtime()
    assert done.exit_code == 0, done.output
    lines = [line for line in done.output.splitlines() if line.startswith("progress ")]
    # A bar written to a log appears only when it stops; the lines appear as trials finish.
    assert [line.split()[1] for line in lines] == ["1/4", "2/4", "3/4", "4/4"]
    assert "pass 4" in lines[-1] and "eta 0m00s" in lines[-1]
    # The run ends by saying how much of its time was the model's (a scripted one: none).
    assert "time in the model 0.0 s of" in done.output


def test_the_model_share_is_the_time_in_the_model_over_the_wall_time() -> None:
    assert model_share(57.0, 60.0).startswith("time in the model 57.0 s of 60.0 s wall (95%)")
    assert "(0%)" in model_share(0.0, 0.0)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_lines_come_every_twentieth_of_the_sweep_and_when_time_passes() -> None:
    clock = _Clock()
    pacer = LinePacer(total=100, every_s=15.0, clock=clock)
    assert pacer.due(0)  # the first look always says where things stand
    assert not pacer.due(4)
    assert pacer.due(5)  # a twentieth of 100
    clock.now = 14.0
    assert not pacer.due(6)
    clock.now = 16.0
    assert pacer.due(6)  # quiet for longer than every_s: a sign of life
    assert pacer.due(100) and not pacer.due(100)  # the end, once


def test_a_progress_line_gives_counts_passes_elapsed_time_and_eta() -> None:
    line = run_line(done=6, total=24, passes=4, elapsed_s=90.0)
    assert line == "progress 6/24 (25%) · pass 4 · 1m30s elapsed · eta 4m30s"
