"""A sweep's page: its counts link to exactly the trials they count (not the trials still to
run, nor infra or harness errors, nor, when the sweep excludes them, those that left the
cassette), and its conversation and simulated-user rates show where the sweep has them."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.report.cells import conversation_cells, user_cells
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.view.app import create_app
from mcp_farm.scheduler.view.cards import Built
from mcp_farm.scheduler.view.html import e
from mcp_farm.scheduler.view.pages import sweep_page
from mcp_farm.scheduler.view.queries import SweepLine, read_only, sweep_lines
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.schema.scorecard import Conversations, Scorecard, SimulatedUsers
from tests.scheduler.view.conftest import LOCAL

COUNT_LINK = re.compile(r'<a href="([^"]*/trials\?[^"]*)">(?:[a-z_]+ )?(\d+)</a>')
"""A cell's `n` (a bare number) or a failure mode's count (`wrong_tool 3`), with its link."""


@pytest.mark.parametrize("counting", ["count", "exclude"])
def test_every_count_on_a_sweep_page_links_to_as_many_trials(tmp_path: Path, counting: str) -> None:
    url = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    writer = make_engine(url)
    init_db(writer)
    load(writer, "sw", trials("sw", [("m", "native")], scenarios(4, seed=3), 6, lambda *_: 0.5, 7))
    with writer.begin() as conn:
        for sql in (
            "update trial set status = 'pending', outcome = null where repetition = 0",
            "update trial set outcome = 'infra_error' where repetition = 1",
            "update trial set outcome = 'harness_error' where repetition = 2 and tier = 'simple'",
            "update trial set left_cassette = true where repetition = 3",
        ):
            conn.execute(text(sql))
        spec = json.dumps({"name": "synthetic", "left_cassette": counting})
        conn.execute(text("update sweep set spec_json = :s, trial_count = 24"), {"s": spec})
    web = TestClient(create_app(read_only(make_engine(url))), base_url=LOCAL)
    page = web.get("/sweeps/sw").text
    links = COUNT_LINK.findall(page)
    # The first count is the configuration's n: 24 trials, less 4 pending, 4 infra errors, 2
    # harness errors, and the 4 that left the cassette when the sweep excludes them.
    assert links[0][1] == ("14" if counting == "count" else "10")
    assert len(links) > 10
    for href, n in links:
        listed = web.get(unescape(href)).text
        found = re.search(r"([\d,]+) trial\(s\); page", listed)
        assert found, f"no count on {href}"
        assert found.group(1) == n, f"{href} lists {found.group(1)} trials, the cell says {n}"


def _small_sweep(tmp_path: Path) -> tuple[Scorecard, SweepLine, str]:
    """A recorded two-scenario sweep: its scorecard, its progress line and its page."""
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    load(engine, "sw", trials("sw", [("m", "native")], scenarios(2, seed=3), 2, lambda *_: 0.5, 7))
    card = build_scorecard(engine=engine, sweep_id="sw")
    (line,) = sweep_lines(engine=engine, sweep_id="sw")
    return card, line, sweep_page(line, Built(card, line.done, 0.0, 0.0))


def test_conversation_and_simulated_user_rates_show_where_the_sweep_has_them(
    tmp_path: Path,
) -> None:
    card, line, plain = _small_sweep(tmp_path)
    assert "Conversations" not in plain and "Simulated users" not in plain
    talk = Conversations(
        model="m",
        prompt="native",
        conversations=4,
        passed=1,
        rate=0.25,
        turns=10,
        turns_passed=7,
        turn_rate=0.7,
        first_failing_turn={"2": 3},
    )
    users = SimulatedUsers(
        model="m",
        prompt="native",
        trials=4,
        passed=1,
        rate=0.25,
        clean=2,
        clean_passed=1,
        clean_rate=0.5,
        user_failures=1,
        agent_failures=2,
        users=["<b>card-user</b>"],
    )
    richer = card.model_copy(update={"conversations": [talk], "simulated_users": [users]})
    page = sweep_page(line, Built(richer, line.done, 0.0, 0.0))
    conversations = page.split("<h2>Conversations</h2>")[1].split("<h2>")[0]
    for cell in conversation_cells(talk):
        assert f'<td class="n">{e(cell)}</td>' in conversations, cell
    simulated = page.split("<h2>Simulated users</h2>")[1].split("<h2>")[0]
    for cell in user_cells(users):
        assert f'<td class="n">{e(cell)}</td>' in simulated, cell
    assert "&lt;b&gt;card-user&lt;/b&gt;" in simulated and "<b>card-user" not in page


def test_a_tool_list_sweep_shows_its_curves_and_its_selection_table(tmp_path: Path) -> None:
    from mcp_farm.scheduler.report.robustness_cells import selection_rows
    from mcp_farm.scheduler.scorecard.robustness import curves
    from mcp_farm.schema.scorecard import SelectionRecall
    from tests.scheduler.scorecard.test_tool_count_curves import FALLING

    card, line, plain = _small_sweep(tmp_path)
    assert "Pass rate against tool count" not in plain and "Tool selection" not in plain
    chosen = SelectionRecall(
        model="m",
        prompt="<i>native</i>",
        method="bm25",
        k=5,
        trials=4,
        held=3,
        rate=0.75,
        low=0.3,
        high=0.95,
        messages=4,
        messages_held=3,
        message_rate=0.75,
        message_low=0.3,
        message_high=0.95,
        failures=2,
        selector_missed=1,
        model_failed=1,
        held_passes=2,
        held_pass_rate=2 / 3,
    )
    richer = card.model_copy(update={"robustness": curves(FALLING, 0.5), "selection": [chosen]})
    page = sweep_page(line, Built(richer, line.done, 0.0, 0.0))
    assert "<h2>Pass rate against tool count</h2>" in page and "<svg" in page
    selection = page.split("<h2>Tool selection before the model</h2>")[1].split("<h2>")[0]
    (row,) = selection_rows(richer)
    assert "<td>bm25</td>" in selection
    for cell in row[3:]:
        assert f'<td class="n">{e(cell)}</td>' in selection, cell
    assert "&lt;i&gt;native&lt;/i&gt;" in selection and "<i>native" not in page
