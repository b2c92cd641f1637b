"""A `–` in a scorecard means "not measured", says why under the tables, and the HTML report
shows it as `–` too, never as 0%."""

from __future__ import annotations

import html
import re
from pathlib import Path

from rich.console import Console

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.report.formats import to_markdown
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.schema.db import (
    init_db,
    make_engine,
)
from mcp_farm.schema.scorecard import Scorecard

CONFIGS = [("small", "native")]


def _card(tmp_path: Path, repetitions: int, *, ttft: bool) -> Scorecard:
    """A sweep where every trial fails, so a pass^k shown as a number would read 0%."""
    engine = make_engine(f"sqlite:///{tmp_path / 'card.sqlite'}")
    init_db(engine)
    rows = []
    for row, calls in trials("sw", CONFIGS, scenarios(6, seed=3), repetitions, lambda *_: 0.0, 7):
        if not ttft:
            row["first_token_s"] = None
        rows.append((row, calls))
    load(engine, "sw", iter(rows))
    return build_scorecard(engine=engine, sweep_id="sw")


def _terminal(card: Scorecard) -> str:
    console = Console(width=200, no_color=True)
    with console.capture() as captured:
        print_scorecard(card, console)
    return " ".join(captured.get().split())


def test_a_dash_in_pass_k_or_ttft_is_explained_under_the_terminal_and_markdown_tables(
    tmp_path: Path,
) -> None:
    card = _card(tmp_path, repetitions=1, ttft=False)
    shown = _terminal(card)
    assert "– not measured: pass^k and pass@k need k ≥ 2 repetitions" in shown
    assert "TTFT needs an endpoint that reports its first token" in shown
    markdown = to_markdown(card)
    assert "_– not measured: pass^k and pass@k need k ≥ 2 repetitions" in markdown
    # Markdown has no TTFT column, so its note does not explain one.
    assert "TTFT" not in markdown


def test_a_card_without_dashes_carries_no_footnote(tmp_path: Path) -> None:
    # Six repetitions: the synthetic sweep rotates three wordings, so even the verbatim and
    # paraphrased rows hold every scenario at least twice.
    card = _card(tmp_path, repetitions=6, ttft=True)
    assert "not measured" not in _terminal(card)
    assert "not measured" not in to_markdown(card)
    assert "not measured" not in to_html(card)


def _config_cells(page: str) -> list[str]:
    """The cells of the first row of the page's per-config table."""
    table = page.split("<h2>Pass rate per model × prompt config</h2>", 1)[1]
    first_row = re.findall(r"<tr>(.*?)</tr>", table)[1]
    return [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", first_row)]


def test_the_html_report_shows_a_dash_not_zero_percent_where_pass_k_is_not_measured(
    tmp_path: Path,
) -> None:
    page = to_html(_card(tmp_path, repetitions=1, ttft=True))
    model, prompt, n, rate, _first, _recovered, _ci, pass_k, *_latency = _config_cells(page)
    assert (model, prompt, n, rate) == ("small", "native", "6", "0%")
    assert pass_k == "–"
    assert "– not measured: pass^k and pass@k need k ≥ 2 repetitions" in html.unescape(page)


def test_the_html_report_shows_pass_k_where_it_is_measured(tmp_path: Path) -> None:
    page = to_html(_card(tmp_path, repetitions=3, ttft=True))
    assert _config_cells(page)[7] == "0%"  # every trial failed: all three never pass together
