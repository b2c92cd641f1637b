"""A tool, model or scenario name with a direction override or an invisible character in it is
shown as its escape in every report a person reads: `farm run`'s closing tables and `farm
report` (terminal, Markdown, HTML with its charts' data, JUnit); `read_file` followed by a
Hangul filler never reads as `read_file`."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from rich.console import Console
from sqlalchemy import text

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.report.formats import to_junit, to_markdown
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
from mcp_farm.scheduler.report.visible import hidden
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.queries.samples import sample_trials
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.schema.scorecard import Scorecard

TOOL = "read_file\u3164"
MODEL = "gpt\u202eexe.4"
SCENARIO = "fs\u200b.budget"


@pytest.fixture
def card_and_samples(tmp_path: Path) -> tuple[Scorecard, object]:
    engine = make_engine(f"sqlite:///{tmp_path / 'card.sqlite'}")
    init_db(engine)
    load(engine, "sw", trials("sw", [("m", "native")], scenarios(3, seed=3), 2, lambda *_: 0.5, 7))
    tools = json.dumps([TOOL])
    with engine.begin() as conn:
        conn.execute(text("update tool_call set tool = :t, model_id = :m"), {"t": TOOL, "m": MODEL})
        conn.execute(
            text(
                "update trial set expected_tools = :e, model_id = :m, "
                "detail = 'called ' || :t || ' with \ufe0f', "
                "scenario_id = case when scenario_id = 's0000' then :s else scenario_id end"
            ),
            {"e": tools, "m": MODEL, "t": TOOL, "s": SCENARIO},
        )
    return build_scorecard(engine=engine, sweep_id="sw"), sample_trials(engine, "sw")


def _no_hidden(shown: str) -> None:
    found = sorted({f"U+{ord(c):04X}" for c in shown if hidden(c)})
    assert found == [], f"shown raw: {found}"


def test_the_terminal_report_shows_escapes_for_hidden_characters_in_names(
    card_and_samples: tuple[Scorecard, object],
) -> None:
    card, _ = card_and_samples
    console = Console(width=300, no_color=True)
    with console.capture() as captured:
        print_scorecard(card, console)
    shown = captured.get()
    _no_hidden(shown)
    assert "read_file\\u3164" in shown and "gpt\\u202eexe.4" in shown


def test_markdown_and_junit_show_escapes_for_hidden_characters_in_names(
    card_and_samples: tuple[Scorecard, object],
) -> None:
    card, _ = card_and_samples
    markdown = to_markdown(card)
    _no_hidden(markdown)
    assert "read_file\\u3164" in markdown and "fs\\u200b.budget" in markdown
    junit = to_junit(card)
    _no_hidden(junit)
    assert "gpt\\u202eexe.4" in junit


def test_the_html_report_its_chart_data_and_transcripts_show_escapes(
    card_and_samples: tuple[Scorecard, object],
) -> None:
    card, samples = card_and_samples
    page = to_html(card, samples)  # type: ignore[arg-type]
    _no_hidden(html.unescape(page))
    # The charts' data: the names as the tables show them.
    assert '"read_file\\\\u3164"' in page
    # The drill-down found its sample trials under the shown names, details escaped too.
    assert "called read_file\\u3164 with \\ufe0f" in page


def test_the_stored_card_keeps_the_names_as_written(
    card_and_samples: tuple[Scorecard, object],
) -> None:
    card, _ = card_and_samples
    to_markdown(card)
    assert TOOL in {r.key for r in card.of("tool")}
