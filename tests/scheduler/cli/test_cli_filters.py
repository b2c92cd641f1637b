"""A filter value that names nothing is an error that says what there is, not an empty table."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from mcp_farm.scheduler.cli.app import app


def _words(text: str) -> str:
    # Click frames usage errors in a box that wraps; compare the words, not the layout.
    return " ".join(text.replace("│", " ").split())


def test_an_unknown_tier_is_refused_with_exit_2_naming_the_tiers() -> None:
    done = CliRunner().invoke(app, ["scenarios", "list", "--tier", "smple"])
    assert done.exit_code == 2
    said = _words(done.output)
    assert "'smple' is not a tier" in said and "simple, moderate, complex" in said
    assert "┏" not in done.output  # no (empty) table


def test_a_tag_no_scenario_has_is_refused_with_the_close_matches() -> None:
    done = CliRunner().invoke(app, ["scenarios", "list", "--tag", "chian"])
    assert done.exit_code == 2
    said = _words(done.output)
    assert "no scenario has tag 'chian'" in said and "close matches: chain" in said


def test_a_tool_or_server_no_scenario_has_is_refused_too() -> None:
    tool = CliRunner().invoke(app, ["scenarios", "list", "--tool", "reed_file"])
    assert tool.exit_code == 2 and "read_file" in _words(tool.output)
    server = CliRunner().invoke(app, ["scenarios", "list", "--server", "calender"])
    assert server.exit_code == 2
    assert "no scenario has server 'calender'" in _words(server.output)
    assert "calendar" in _words(server.output)


def test_known_filters_that_match_nothing_together_say_so_instead_of_an_empty_table() -> None:
    done = CliRunner().invoke(
        app, ["scenarios", "list", "--tier", "simple", "--tag", "chain", "--server", "email"]
    )
    assert done.exit_code == 0, done.output
    assert "no scenario matches all of these filters together" in done.output
    assert "┏" not in done.output


def test_a_known_tier_still_lists_its_scenarios() -> None:
    # Wide, whatever COLUMNS the tests run under: at 80 the id column folds ids mid-word.
    done = CliRunner().invoke(
        app, ["scenarios", "list", "--tier", "simple"], env={"COLUMNS": "400"}
    )
    assert done.exit_code == 0, done.output
    assert "fs.list-desktop" in done.output and " complex " not in done.output


def test_an_unknown_compare_cell_kind_is_refused_with_exit_2(tmp_path: Path) -> None:
    done = CliRunner().invoke(
        app, ["compare", "a", "b", "--by", "tol", "--db", f"sqlite:///{tmp_path / 'f.sqlite'}"]
    )
    assert done.exit_code == 2
    said = _words(done.output)
    assert "unknown cell kind 'tol'" in said and "config, tool, tier" in said
