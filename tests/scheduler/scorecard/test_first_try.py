"""First-try pass rate: stored per trial, counted in every scorecard row, gated and compared,
alike on SQLite and PostgreSQL."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.compare import Side, compare
from mcp_farm.scheduler.scorecard.gates import check_gates
from mcp_farm.schema import Gate
from mcp_farm.schema.db import init_db, make_engine

CONFIGS = [("big", "native"), ("small", "json")]
# A pass is first-try on even repetitions: a known share to check the counts against.
MARK = """update trial set first_try = case when outcome = 'pass' and repetition % 2 = 0
          then true else false end
          where sweep_id = :s and outcome not in ('infra_error', 'harness_error')"""


def _loaded(engine: Engine, sweep: str = "sw", mark: bool = True) -> list[dict[str, object]]:
    init_db(engine)
    rows = list(trials(sweep, CONFIGS, scenarios(6, seed=2), 4, lambda *_: 0.7, seed=5))
    load(engine, sweep, iter(rows))
    if mark:
        with engine.begin() as conn:
            conn.execute(text(MARK), {"s": sweep})
    return [row for row, _calls in rows]


def _expected(rows: list[dict[str, object]]) -> dict[tuple[str, str], tuple[int, int]]:
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        if row["outcome"] in ("infra_error", "harness_error"):
            continue
        key = (str(row["model_id"]), str(row["prompt_id"]))
        counts[key][0] += 1
        counts[key][1] += row["outcome"] == "pass" and int(str(row["repetition"])) % 2 == 0
    return {k: (v[0], v[1]) for k, v in counts.items()}


def _check(engine: Engine) -> None:
    rows = _loaded(engine)
    card = build_scorecard(engine=engine, sweep_id="sw")
    expected = _expected(rows)
    for r in card.of("config"):
        n, first = expected[(r.model, r.prompt)]
        assert (r.n, r.first_passes) == (n, first)
        assert r.first_rate == pytest.approx(first / n)
        assert r.first_passes <= r.passes
    for r in card.of("scenario"):
        assert r.first_rate is not None and r.first_rate <= (r.rate or 0)


def test_first_try_rate_follows_the_stored_trials_on_sqlite(tmp_path: Path) -> None:
    _check(make_engine(f"sqlite:///{tmp_path / 'first.sqlite'}"))


def test_first_try_rate_follows_the_stored_trials_on_postgres(pg_engine: Engine) -> None:
    _check(pg_engine)


def test_trials_without_a_first_try_record_give_no_rate_not_zero(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'old.sqlite'}")
    _loaded(engine, mark=False)
    card = build_scorecard(engine=engine, sweep_id="sw")
    assert all(r.first_rate is None for r in card.rows if r.n)


def test_a_gate_and_a_comparison_read_the_first_try_rate(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'gate.sqlite'}")
    _loaded(engine)
    card = build_scorecard(engine=engine, sweep_id="sw")
    lowest = min(r.first_rate or 0 for r in card.of("config"))
    passing = Gate(metric="first_try_rate", min=lowest)
    failing = Gate(metric="first_try_rate", min=lowest + 0.01)
    assert check_gates(card, [passing])[1] == []
    assert len(check_gates(card, [failing])[1]) >= 1
    _loaded(engine, sweep="sw2")
    found = compare(engine, Side.parse("sw"), Side.parse("sw2"), ["config"])
    rates = {r.prompt: r.first_rate for r in card.of("config")}
    for c in found:
        model_prompt = c.label.split("/")
        assert c.first_try[0] == pytest.approx(rates[model_prompt[1]])
