"""The first-try rate is shown, with its value, in every report medium and in `farm compare`."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from sqlalchemy import text
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.report.cells import pct
from mcp_farm.scheduler.report.formats import to_markdown
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.schema.db import (
    init_db,
    make_engine,
)
from mcp_farm.schema.scorecard import Row

CONFIGS = [("small", "native")]
# Passes count as first-try on repetitions below `:first`: a share well apart from the pass rate.
MARK = """update trial set first_try = (outcome = 'pass' and repetition < :first)
          where sweep_id = :s"""


def _sweep(engine: Engine, sweep: str, first: int) -> None:
    rows = trials(sweep, CONFIGS, scenarios(6, seed=3), 4, lambda *_: 0.8, seed=9)
    load(engine, sweep, rows)
    with engine.begin() as conn:
        conn.execute(text(MARK), {"s": sweep, "first": first})


def _engine(tmp_path: Path) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'first.sqlite'}")
    init_db(engine)
    return engine


def _config_row(engine: Engine, sweep: str) -> Row:
    (row,) = build_scorecard(engine=engine, sweep_id=sweep).of("config")
    assert row.first_rate is not None and row.rate is not None
    assert pct(row.first_rate) != pct(row.rate)  # so a swapped column would show
    return row


def test_terminal_markdown_and_html_show_the_first_try_rate_beside_the_pass_rate(
    tmp_path: Path,
) -> None:
    engine = _engine(tmp_path)
    _sweep(engine, "sw", first=1)
    card = build_scorecard(engine=engine, sweep_id="sw")
    row = _config_row(engine, "sw")
    console = Console(width=200, no_color=True)
    with console.capture() as captured:
        print_scorecard(card, console)
    line = next(t for t in captured.get().splitlines() if "small" in t and "native" in t)
    cells = [c.strip() for c in line.split("│") if c.strip()]
    assert cells[2:5] == [str(row.n), pct(row.rate), pct(row.first_rate)]
    markdown = f"| small | native | {row.n} | {pct(row.rate)} | {pct(row.first_rate)} |"
    assert markdown in to_markdown(card)
    shown = f'<td class="n">{row.n}</td><td class="n">{pct(row.rate)}</td>'
    assert shown + f'<td class="n">{pct(row.first_rate)}</td>' in to_html(card)


def test_compare_shows_the_first_try_rate_of_each_side(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    _sweep(engine, "sa", first=1)
    _sweep(engine, "sb", first=3)
    a, b = _config_row(engine, "sa"), _config_row(engine, "sb")
    assert pct(a.first_rate) != pct(b.first_rate)
    url = str(engine.url.render_as_string(hide_password=False))
    args = ["compare", "sa", "sb", "--by", "config", "--all", "--db", url]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"{pct(a.first_rate)}→{pct(b.first_rate)}" in result.output
