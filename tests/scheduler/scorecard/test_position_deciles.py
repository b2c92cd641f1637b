"""Pass rate by where the expected tool sat in the list shown (its decile), from each trial's
recorded `tool_positions`, in the scorecard and the terminal, Markdown and HTML reports."""

from __future__ import annotations

import io
import json
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from sqlalchemy import text

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.report.formats import to_markdown
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.schema.db import init_db, make_engine

LEVELS = ["native@tools=50,desc=as_is,names=as_is", "native@tools=0,desc=as_is,names=as_is"]


def test_trials_at_levels_with_distractors_are_counted_by_their_tools_decile(
    tmp_path: Path,
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'card.sqlite'}")
    init_db(engine)
    configs = [("m", label) for label in LEVELS]
    load(engine, "sw", trials("sw", configs, scenarios(6, seed=3), 4, lambda *_: 0.5, seed=7))
    expected: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    with engine.begin() as conn:
        rows = conn.execute(
            text("select trial_id, prompt_id, repetition, outcome from trial order by trial_id")
        ).all()
        for k, (trial_id, prompt_id, repetition, outcome) in enumerate(rows):
            index = (k * 7 + repetition) % 60  # of 60 tools: decile index // 6
            at = {"tool": "t", "server": "s", "index": index, "listed": 60}
            # A second expected tool never counts: the first one's position does.
            later = {"tool": "u", "server": "s", "index": 59, "listed": 60}
            provenance = json.dumps({"tool_positions": [at, later]})
            conn.execute(
                text("update trial set provenance_json = :v where trial_id = :t"),
                {"v": provenance, "t": trial_id},
            )
            if prompt_id == LEVELS[0] and outcome not in ("infra_error", "harness_error"):
                expected[index // 6][0] += 1
                expected[index // 6][1] += outcome == "pass"
    card = build_scorecard(engine=engine, sweep_id="sw")
    found = {d.decile: [d.n, d.passes] for d in card.positions}
    assert found == dict(expected)
    assert {(d.model, d.prompt, d.descriptions, d.names) for d in card.positions} == {
        ("m", "native", "as_is", "as_is")
    }
    out = io.StringIO()
    print_scorecard(card, Console(file=out, width=200, force_terminal=False))
    assert "Pass rate by where the expected tool sat" in out.getvalue()
    first = min(card.positions, key=lambda d: d.decile)
    row = f"| m | native | as_is | as_is | {first.decile + 1} | {first.n} |"
    assert "### Pass rate by where the expected tool sat" in to_markdown(card)
    assert row in to_markdown(card)
    page = to_html(card)
    assert "<h3>Pass rate by where the expected tool sat" in page
    assert f'<td class="n">{first.decile + 1}</td><td class="n">{first.n}</td>' in page
