"""Prompt tokens per tool-list level and tokens per tool, from the trials' recorded counts, in
the scorecard and every report."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from sqlalchemy import text

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.report.formats import to_markdown
from mcp_farm.scheduler.report.html.curves import tokens_svg
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.robustness import curves
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.schema.scorecard import Row
from tests.scheduler.scorecard.test_tool_count_curves import FALLING, _card

LEVELS = {0: 400, 10: 900, 50: 2900}
"""Prompt tokens each trial of a level records: 400 + 50 per tool."""


def _label(count: int) -> str:
    return f"native@tools={count},desc=as_is,names=as_is"


def test_a_levels_tokens_are_the_mean_of_its_graded_trials_that_recorded_any(
    tmp_path: Path,
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'card.sqlite'}")
    init_db(engine)
    configs = [("m", _label(count)) for count in LEVELS]
    load(engine, "sw", trials("sw", configs, scenarios(4, seed=3), 3, lambda *_: 0.5, seed=7))
    with engine.begin() as conn:
        for count, tokens in LEVELS.items():
            conn.execute(
                text("update trial set tokens_prompt = :v where prompt_id = :p"),
                {"v": tokens, "p": _label(count)},
            )
        # A trial that recorded no tokens does not pull its level's mean down.
        first = conn.execute(
            text("select min(trial_id) from trial where prompt_id = :p"), {"p": _label(0)}
        ).scalar_one()
        conn.execute(text("update trial set tokens_prompt = 0 where trial_id = :t"), {"t": first})
    card = build_scorecard(engine=engine, sweep_id="sw")
    (curve,) = card.robustness
    assert [(p.tool_count, p.prompt_tokens) for p in curve.points] == [
        (count, pytest.approx(tokens)) for count, tokens in LEVELS.items()
    ]
    assert curve.tokens_per_tool == pytest.approx(50.0)


def _with_tokens(rows: list[Row], tokens: list[float]) -> dict[tuple[str, str], float]:
    return {("m", r.prompt): t for r, t in zip(rows, tokens, strict=True)}


def test_tokens_per_tool_is_the_least_squares_slope_and_needs_two_counts() -> None:
    (curve,) = curves(FALLING, 0.5, _with_tokens(FALLING, [100.0, 160.0, 400.0, 1300.0]))
    assert curve.tokens_per_tool == pytest.approx(6.0)
    (one,) = curves(FALLING, 0.5, {("m", FALLING[1].prompt): 160.0})
    assert one.tokens_per_tool is None
    (none,) = curves(FALLING, 0.5)
    assert none.tokens_per_tool is None and none.points[0].prompt_tokens is None


def test_every_report_shows_the_tokens_per_level_and_per_tool() -> None:
    robustness = curves(FALLING, 0.5, _with_tokens(FALLING, [100.0, 160.0, 400.0, 1300.0]))
    card = _card().model_copy(update={"robustness": robustness})
    markdown = to_markdown(card)
    assert "| prompt tokens |" in markdown and "| 1,300 |" in markdown
    assert "6 prompt tokens per tool" in markdown
    out = io.StringIO()
    print_scorecard(card, Console(file=out, width=250, force_terminal=False))
    assert "6 prompt tokens per tool" in out.getvalue()
    page = to_html(card)
    assert "Pass rate against prompt tokens" in page
    svg = tokens_svg(robustness[0])
    assert ">mean prompt tokens per trial</text>" in svg and svg.count("<circle") == 4
    assert tokens_svg(curves(FALLING, 0.5)[0]) == ""
