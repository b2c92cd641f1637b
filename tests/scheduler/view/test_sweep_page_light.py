"""A big sweep's page stays light and its card fresh: long scorecard tables are paged, a big
sweep's card is built in a child process (not in the explorer's own), and a running sweep's card
is due again REBUILD_S after the last build started, however long that build took."""

from __future__ import annotations

import re
import time
from html import unescape
from pathlib import Path
from typing import cast

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.view import cards as cards_module
from mcp_farm.scheduler.view.app import create_app
from mcp_farm.scheduler.view.cards import REBUILD_S, Built, Cards
from mcp_farm.scheduler.view.pages import TABLE_ROWS
from mcp_farm.scheduler.view.queries import read_only
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.schema.scorecard import Scorecard
from tests.scheduler.view.conftest import LOCAL

SCENARIO_ROW = re.compile(r"<td>m</td><td>native</td><td>(s\d{4})</td>")
NEXT = re.compile(r'<a href="([^"]+)">next ›</a>')


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    """A finished sweep of 250 scenarios: 250 rows per scenario, more than a table shows."""
    url = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    writer = make_engine(url)
    init_db(writer)
    load(
        writer, "sw", trials("sw", [("m", "native")], scenarios(250, seed=1), 2, lambda *_: 0.5, 3)
    )
    with writer.begin() as conn:
        conn.execute(text("update sweep set trial_count = 500"))
    writer.dispose()
    return read_only(make_engine(url))


def test_a_long_table_is_paged_and_its_pages_together_show_every_row(engine: Engine) -> None:
    web = TestClient(create_app(engine, cards=Cards(engine, first_wait_s=60)), base_url=LOCAL)
    seen: list[str] = []
    href: str | None = "/sweeps/sw"
    while href is not None and len(seen) < 1000:
        page = web.get(href).text
        shown = SCENARIO_ROW.findall(page)
        assert len(shown) <= TABLE_ROWS
        seen += shown
        found = [h for h in NEXT.findall(page) if "scenario_page" in h]
        href = unescape(found[0]) if found else None
    assert seen == [f"s{i:04d}" for i in range(250)]
    assert "rows 201–250 of 250" in page


@pytest.mark.parametrize(
    "query", ["scenario_page=0", "scenario_page=x", "nothing_page=2", "search=a"]
)
def test_a_sweep_page_refuses_a_table_page_it_does_not_have(engine: Engine, query: str) -> None:
    web = TestClient(create_app(engine, cards=Cards(engine, first_wait_s=60)), base_url=LOCAL)
    assert web.get(f"/sweeps/sw?{query}").status_code == 400


def test_a_big_sweeps_card_is_built_in_a_child_process_and_equals_one_built_here(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cards_module, "CHILD_FROM_TRIALS", 100)
    cards = Cards(engine, first_wait_s=0)
    try:
        assert cards.card("sw", 300, live=True, total=500) is None  # started, not waited for
        cards.settle(120)
        built = cards.card("sw", 300, live=True, total=500)
        assert built is not None and cards._child is not None
        assert built.card.rows == build_scorecard(engine=engine, sweep_id="sw").rows
    finally:
        cards.close()


def test_a_running_sweeps_card_is_due_rebuild_s_after_its_build_started_however_long_it_took() -> (
    None
):
    now = time.monotonic()
    card = cast("Scorecard", object())  # when it is due does not read the card
    slow = Built(card, done=10, at=now, took_s=300.0, started=now - REBUILD_S - 1)
    assert Cards._due(slow, done=11)
    assert not Cards._due(slow, done=10), "no trial finished since: nothing to rebuild"
    recent = Built(card, done=10, at=now, took_s=0.1, started=now - 1)
    assert not Cards._due(recent, done=11)
