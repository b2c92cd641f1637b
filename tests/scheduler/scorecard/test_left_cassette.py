"""Trials that left their cassette: counted per configuration on every scorecard, and left out
of every rate, outcome count and latency when the sweep (or the report) excludes them."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import Engine

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.report.cells import cassette_note
from mcp_farm.scheduler.report.formats import to_markdown
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.compare import Side, compare
from mcp_farm.schema.db import init_db, make_engine

CONFIGS = [("big", "native"), ("small", "native")]


def _engine(tmp_path: Path) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'card.sqlite'}")
    init_db(engine)
    rows = trials("sw", CONFIGS, scenarios(6, seed=2), 4, lambda *_: 0.6, seed=5)
    load(engine, "sw", rows)
    with engine.begin() as conn:
        # Every trial of `small` at repetition 0 strayed off the cassette.
        conn.execute(
            text(
                "update trial set left_cassette = true where model_id = 'small' and repetition = 0"
            )
        )
    return engine


def _exclude(engine: Engine) -> None:
    with engine.begin() as conn:
        spec = json.dumps({"name": "synthetic", "left_cassette": "exclude"})
        conn.execute(text("update sweep set spec_json = :s"), {"s": spec})


def test_strays_are_counted_by_default_and_shown_per_config(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    card = build_scorecard(engine=engine, sweep_id="sw")
    assert card.left_cassette == "count"
    assert {x.model: x.left_cassette for x in card.extras} == {"big": 0, "small": 6}
    assert {r.model: r.n for r in card.of("config")} == {"big": 24, "small": 24}
    note = cassette_note(card)
    assert "small × native: 6" in note and "big" not in note and "counted like any" in note
    assert note in to_markdown(card)


def test_an_excluding_sweep_leaves_strays_out_of_rates_outcomes_and_latency(
    tmp_path: Path,
) -> None:
    engine = _engine(tmp_path)
    with engine.connect() as conn:
        kept = conn.execute(
            text(
                "select count(*), sum(case when outcome = 'pass' then 1 else 0 end) from trial"
                " where model_id = 'small' and not left_cassette"
            )
        ).one()
    _exclude(engine)
    card = build_scorecard(engine=engine, sweep_id="sw")
    assert card.left_cassette == "exclude"
    small = next(r for r in card.of("config") if r.model == "small")
    assert (small.n, small.passes) == tuple(kept)
    assert sum(small.outcomes.values()) == kept[0]
    assert small.latency.n == kept[0]
    assert small.k == 3  # repetition 0 is gone from every scenario
    assert card.done == 48  # still recorded, and still counted
    assert {x.model: x.left_cassette for x in card.extras}["small"] == 6
    assert "left out of every rate" in cassette_note(card)
    # The report can count them again, for itself.
    counted = build_scorecard(engine=engine, sweep_id="sw", left_cassette="count")
    assert next(r for r in counted.of("config") if r.model == "small").n == 24


def test_compare_leaves_out_what_the_sweep_excludes(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    _exclude(engine)
    [row] = compare(engine, Side("sw", "big"), Side("sw", "small"), ["config"])
    assert (row.diff.a_n, row.diff.b_n) == (24, 18)
