"""Scorecards from stored trials: the numbers, both databases, the stored JSON and its schema."""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import pairwise
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from statsmodels.stats.proportion import proportion_confint

from bench.synthetic import SyntheticScenario, load, scenarios, trials
from mcp_farm.scheduler.scorecard.aggregate import scorecard_of
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.queries.stored import (
    store_scorecard,
    stored_scorecard,
)
from mcp_farm.schema.db import (
    init_db,
    make_engine,
)
from mcp_farm.schema.scorecard import Scorecard

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = [("big", "native"), ("big", "json"), ("small", "native")]


def _rate(model: str, prompt: str, scenario: SyntheticScenario) -> float:
    base = {"big": 0.8, "small": 0.3}[model]
    return base - (0.2 if prompt == "json" else 0.0) - 0.1 * (scenario.tier == "complex")


def _load(engine: Engine, reps: int = 5) -> list[tuple[dict[str, object], list[dict[str, object]]]]:
    init_db(engine)
    rows = list(trials("sw", CONFIGS, scenarios(9, seed=4), reps, _rate, seed=11))
    load(engine, "sw", iter(rows))
    return rows


def _sqlite(tmp_path: Path) -> Engine:
    return make_engine(f"sqlite:///{tmp_path / 'card.sqlite'}")


def test_rates_intervals_and_pass_k_follow_the_stored_trials(tmp_path: Path) -> None:
    engine = _sqlite(tmp_path)
    rows = _load(engine)
    card = build_scorecard(engine=engine, sweep_id="sw")
    assert (card.total, card.done) == (len(rows), len(rows))
    by_config: dict[tuple[str, str], list[bool]] = defaultdict(list)
    by_scenario: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    for row, _calls in rows:
        key = (str(row["model_id"]), str(row["prompt_id"]))
        by_config[key].append(row["outcome"] == "pass")
        by_scenario[(*key, str(row["scenario_id"]))].append(row["outcome"] == "pass")
    for r in card.of("config"):
        outcomes = by_config[(r.model, r.prompt)]
        assert (r.n, r.passes) == (len(outcomes), sum(outcomes))
        assert (r.low, r.high) == pytest.approx(
            proportion_confint(sum(outcomes), len(outcomes), method="wilson")
        )
        # pass^5 of a scenario with 5 repetitions is 1 only when all 5 passed.
        scenario_all = [
            all(v) for (m, p, _s), v in by_scenario.items() if (m, p) == (r.model, r.prompt)
        ]
        assert r.k == 5
        assert r.pass_hat_k == pytest.approx(np.mean(scenario_all))
        scenario_any = [
            any(v) for (m, p, _s), v in by_scenario.items() if (m, p) == (r.model, r.prompt)
        ]
        assert r.pass_at_k == pytest.approx(np.mean(scenario_any))
    for extra in card.extras:
        latencies = [
            float(str(row["latency_s"]))
            for row, _ in rows
            if (row["model_id"], row["prompt_id"]) == (extra.model, extra.prompt)
        ]
        edges = [0.0, *card.latency_bins]
        expected = [sum(1 for v in latencies if lo < v <= hi) for lo, hi in pairwise(edges)]
        assert extra.histogram == [*expected, sum(1 for v in latencies if v > edges[-1])]
    tiers = {r.key for r in card.of("tier")}
    assert tiers == {"simple", "moderate", "complex"}
    assert {r.key for r in card.of("phrasing")} == {"verbatim", "paraphrased"}
    # A trial counts once for each tool it expects.
    expected_tool_rows = sum(len(json.loads(str(row["expected_tools"]))) for row, _ in rows)
    assert sum(r.n for r in card.of("tool")) == expected_tool_rows


def test_infra_errors_are_counted_but_not_graded_and_an_all_infra_cell_is_empty(
    tmp_path: Path,
) -> None:
    engine = _sqlite(tmp_path)
    _load(engine, reps=1)
    with engine.begin() as conn:
        conn.execute(
            text(
                "update trial set outcome = 'infra_error' where model_id = 'small'"
                " and scenario_id = 's0000'"
            )
        )
    card = build_scorecard(engine=engine, sweep_id="sw")
    cell = next(r for r in card.of("scenario") if r.model == "small" and r.key == "s0000")
    assert (cell.n, cell.rate, cell.pass_hat_k) == (0, None, None)
    assert cell.outcomes == {"infra_error": 1}
    config = next(r for r in card.of("config") if r.model == "small")
    assert config.n == 8 and config.outcomes["infra_error"] == 1
    # One repetition: pass^1 is the pass rate.
    assert config.k == 1 and config.pass_hat_k == pytest.approx(config.rate)


def _latency_of(card: Scorecard) -> dict[tuple[str, str, str, str], tuple[float | None, ...]]:
    return {
        (r.dimension, r.model, r.prompt, r.key): (r.latency.p50, r.latency.p95, r.latency.p99)
        for r in card.rows
    }


@pytest.mark.integration
def test_postgres_and_sqlite_build_the_same_card(tmp_path: Path, pg_engine: Engine) -> None:
    lite = _sqlite(tmp_path)
    rows = _load(lite)
    _load(pg_engine)
    a = build_scorecard(engine=lite, sweep_id="sw")
    b = build_scorecard(engine=pg_engine, sweep_id="sw")
    assert [(r.dimension, r.key, r.n, r.passes) for r in a.rows] == [
        (r.dimension, r.key, r.n, r.passes) for r in b.rows
    ]
    lat_a, lat_b = _latency_of(a), _latency_of(b)
    assert lat_a.keys() == lat_b.keys()
    for key, values in lat_a.items():
        assert values == pytest.approx(lat_b[key])
    # And both equal numpy on the raw samples.
    big = [float(str(r["latency_s"])) for r, _ in rows if r["model_id"] == "big"]
    big_native = [
        float(str(r["latency_s"]))
        for r, _ in rows
        if r["model_id"] == "big" and r["prompt_id"] == "native"
    ]
    assert big and lat_b[("config", "big", "native", "")] == pytest.approx(
        tuple(np.percentile(big_native, [50, 95, 99]))
    )
    assert a.tool_calls == b.tool_calls
    for x, y in zip(a.extras, b.extras, strict=True):
        assert x.tokens_per_s == pytest.approx(y.tokens_per_s)  # summed in another order
        assert x.model_copy(update={"tokens_per_s": 0}) == y.model_copy(update={"tokens_per_s": 0})


def _approx(value: object) -> object:
    if isinstance(value, float):
        return pytest.approx(value, nan_ok=True)
    if isinstance(value, dict):
        return {k: _approx(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_approx(v) for v in value]
    return value


# Trials in every state the scan must tell apart: unfinished (pending, running), infra errors,
# a done trial with no outcome, and done trials missing a latency or a time to first token.
UNEVEN = [
    "update trial set status = 'pending', outcome = null, latency_s = null, first_token_s = null"
    " where scenario_id = 's0001' and repetition = 0",
    "update trial set status = 'running', outcome = null where scenario_id = 's0002'"
    " and repetition < 2",
    "update trial set outcome = 'infra_error' where scenario_id = 's0003' and model_id = 'big'",
    "update trial set outcome = null where scenario_id = 's0004' and repetition = 1",
    "update trial set latency_s = null where scenario_id = 's0005' and repetition = 3",
    "update trial set first_token_s = null where model_id = 'small'",
]


@pytest.mark.integration
def test_postgres_and_sqlite_agree_on_unfinished_trials_infra_errors_and_missing_latencies(
    tmp_path: Path, pg_engine: Engine
) -> None:
    cards = []
    for engine in (_sqlite(tmp_path), pg_engine):
        _load(engine)
        with engine.begin() as conn:
            for statement in UNEVEN:
                conn.execute(text(statement))
        card = build_scorecard(engine=engine, sweep_id="sw")
        cards.append(card.model_dump(exclude={"built_at"}))
    lite, pg = cards
    assert (pg["total"], pg["done"]) == (lite["total"], lite["done"]) == (135, 126)
    # Means and sums over groups that each database returns in its own order.
    assert pg == _approx(lite)
    small = next(e for e in pg["extras"] if e["model"] == "small")
    assert small["first_token"]["n"] == 0


def test_an_empty_sweep_builds_an_empty_card(tmp_path: Path) -> None:
    engine = _sqlite(tmp_path)
    init_db(engine)
    load(engine, "empty", iter([]))
    card = build_scorecard(engine=engine, sweep_id="empty")
    assert (card.total, card.done, card.rows, card.tool_calls) == (0, 0, [], [])


def test_the_stored_card_round_trips_and_validates_against_the_published_schema(
    tmp_path: Path,
) -> None:
    engine = _sqlite(tmp_path)
    _load(engine, reps=2)
    card = build_scorecard(engine=engine, sweep_id="sw")
    store_scorecard(engine=engine, card=card)
    assert stored_scorecard(engine=engine, sweep_id="sw") == card
    published = json.loads((ROOT / "docs" / "scorecard.schema.json").read_text())
    assert published == Scorecard.model_json_schema(), (
        "docs/scorecard.schema.json is stale: regenerate it with "
        "`.venv/bin/python -m mcp_farm.schema.scorecard > docs/scorecard.schema.json`"
    )
    jsonschema.validate(json.loads(card.model_dump_json()), published)


def test_a_card_stored_in_an_older_format_is_rebuilt(tmp_path: Path) -> None:
    engine = _sqlite(tmp_path)
    _load(engine, reps=1)
    card = scorecard_of(engine=engine, sweep_id="sw")
    with engine.begin() as conn:
        conn.execute(text("update scorecard set version = 1, card_json = '{}'"))
    assert stored_scorecard(engine=engine, sweep_id="sw") is None
    assert scorecard_of(engine=engine, sweep_id="sw").rows == card.rows
