"""Selection recall in the scorecard: per config that selects tools, the share of trials and of
user messages whose selection held their tools, and failures split between selector and model,
in every report."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from sqlalchemy import text
from sqlalchemy.engine import Engine

from bench.synthetic import load, scenarios, trials
from mcp_farm.scenarios import find_scenario
from mcp_farm.scheduler.report.formats import to_markdown
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.statistics.rates import wilson
from mcp_farm.schema import ScenarioSelection, Settings, SweepSpec
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.schema.scorecard import Scorecard
from tests.helpers import ideal_script, run_sweep_embedded, scripted

CONFIGS = [("m", "native-bm25"), ("m", "native")]
RECALLS: dict[int, list[float | None]] = {0: [0.5, 1.0], 1: [None], 2: [1.0, None], 3: [1.0]}
"""Per repetition, the recall of each user message: repetition 0's first selection missed a
tool; repetition 1's one message called for none."""


def _engine(tmp_path: Path, engine: Engine | None = None) -> Engine:
    engine = engine or make_engine(f"sqlite:///{tmp_path / 'card.sqlite'}")
    init_db(engine)
    load(engine, "sw", trials("sw", CONFIGS, scenarios(6, seed=3), 4, lambda *_: 0.5, seed=7))
    payload = json.dumps({"prompt": {"id": "native-bm25", "select": {"method": "bm25", "k": 5}}})
    with engine.begin() as conn:
        rows = conn.execute(
            text("select trial_id, repetition from trial where prompt_id = 'native-bm25'")
        ).all()
        for trial_id, repetition in rows:
            provenance = json.dumps({"selection_recall": RECALLS[repetition]})
            conn.execute(
                text(
                    "update trial set payload_json = :p, provenance_json = :v where trial_id = :t"
                ),
                {"p": payload, "v": provenance, "t": trial_id},
            )
    return engine


def _outcomes(engine: Engine) -> dict[int, list[str]]:
    with engine.connect() as conn:
        rows = conn.execute(
            text("select repetition, outcome from trial where prompt_id = 'native-bm25'")
        ).all()
    found: dict[int, list[str]] = {r: [] for r in RECALLS}
    for repetition, outcome in rows:
        found[repetition].append(outcome)
    return found


def test_recall_and_the_failure_split_follow_each_messages_recall(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    card = build_scorecard(engine=engine, sweep_id="sw")
    (chosen,) = card.selection  # the config without `select:` has no entry
    assert (chosen.model, chosen.prompt, chosen.method, chosen.k) == ("m", "native-bm25", "bm25", 5)
    outcomes = _outcomes(engine)
    # Repetition 1 called for no tool: no trial of it is counted as held or missed.
    assert chosen.trials == 6 * 3
    assert chosen.held == 6 * 2
    assert (chosen.low, chosen.high) == wilson(12, 18)
    assert (chosen.messages, chosen.messages_held) == (6 * 4, 6 * 3)
    failed = {r: sum(o != "pass" for o in outs) for r, outs in outcomes.items()}
    assert chosen.failures == sum(failed.values())
    assert chosen.selector_missed == failed[0]
    assert chosen.model_failed == failed[1] + failed[2] + failed[3]
    held_passes = sum(o == "pass" for r in (2, 3) for o in outcomes[r])
    assert chosen.held_passes == held_passes
    assert chosen.held_pass_rate == held_passes / 12


def test_every_report_shows_the_selection_and_json_keeps_it(tmp_path: Path) -> None:
    card = build_scorecard(engine=_engine(tmp_path), sweep_id="sw")
    out = io.StringIO()
    print_scorecard(card, Console(file=out, width=250, color_system=None))
    terminal = out.getvalue()
    assert "Tool selection before the model" in terminal and "selector missed" in terminal
    markdown = to_markdown(card)
    assert "## Tool selection before the model" in markdown
    assert "| m | native-bm25 | bm25 | 5 | 18 | 67% |" in markdown
    assert "<h2>Tool selection before the model</h2>" in to_html(card)
    again = Scorecard.model_validate_json(card.model_dump_json())
    assert again.selection == card.selection


def test_a_sweep_without_selection_has_no_section(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'plain.sqlite'}")
    init_db(engine)
    load(
        engine,
        "sw",
        trials("sw", [("m", "native")], scenarios(3, seed=1), 2, lambda *_: 0.5, seed=1),
    )
    card = build_scorecard(engine=engine, sweep_id="sw")
    assert card.selection == []
    assert "Tool selection" not in to_markdown(card)


def test_postgres_gives_the_same_selection_as_sqlite(tmp_path: Path, pg_engine: Engine) -> None:
    lite = build_scorecard(engine=_engine(tmp_path), sweep_id="sw")
    pg = build_scorecard(engine=_engine(tmp_path, pg_engine), sweep_id="sw")
    assert pg.selection == lite.selection != []


@pytest.mark.integration
def test_an_embedded_sweep_with_a_selecting_prompt_gets_its_selection_row(
    settings: Settings,
) -> None:
    scenario = find_scenario("basic", "fs.read-todo")
    sweep = SweepSpec(
        name="chosen",
        models=[scripted(ideal_script(scenario), "ideal")],
        prompts=["native-bm25", "native"],
        scenarios=ScenarioSelection(suites=["basic"], ids=[scenario.id]),
        repetitions=2,
        paraphrases="verbatim",
    )
    engine, plan = run_sweep_embedded(sweep, settings)
    card = build_scorecard(engine=engine, sweep_id=plan.sweep_id)
    (chosen,) = card.selection
    assert (chosen.model, chosen.prompt, chosen.method, chosen.k) == (
        "ideal",
        "native-bm25",
        "bm25",
        5,
    )
    assert (chosen.trials, chosen.held, chosen.messages, chosen.messages_held) == (2, 2, 2, 2)
    assert (chosen.failures, chosen.held_passes) == (0, 2)


TURNS: dict[int, list[dict[str, object]]] = {
    0: [
        {"recall": 0.5, "tied": True, "ranks": [2, 7], "seconds": 0.1},
        {"recall": 1.0, "tied": False, "ranks": [1], "seconds": 0.3},
    ],
    1: [{"recall": None, "tied": True, "ranks": [], "seconds": 0.2}],
    2: [
        {"recall": 1.0, "tied": False, "ranks": [4], "seconds": 0.4},
        {"recall": None, "tied": False, "ranks": [], "seconds": 0.5},
    ],
    3: [{"recall": 1.0, "tied": False, "ranks": [12, None], "seconds": 0.6}],
}
"""Per repetition, each selection as a trial records it (provenance `selections`)."""


def _with_turns(tmp_path: Path) -> Engine:
    engine = _engine(tmp_path)
    with engine.begin() as conn:
        rows = conn.execute(
            text("select trial_id, repetition from trial where prompt_id = 'native-bm25'")
        ).all()
        for trial_id, repetition in rows:
            recalls = [t["recall"] for t in TURNS[repetition]]
            pins = {"selection_recall": recalls, "selections": TURNS[repetition]}
            conn.execute(
                text("update trial set provenance_json = :v where trial_id = :t"),
                {"v": json.dumps(pins), "t": trial_id},
            )
    return engine


def test_ties_recall_at_each_cut_off_and_selection_time_come_from_each_selection(
    tmp_path: Path,
) -> None:
    card = build_scorecard(engine=_with_turns(tmp_path), sweep_id="sw")
    (chosen,) = card.selection
    # Six scenarios: every count is six times one scenario's.
    assert (chosen.selections, chosen.tied, chosen.tied_trials) == (6 * 6, 6 * 2, 6 * 2)
    # Messages that called for a tool: [2, 7], [1], [4], [12, None].
    assert chosen.recall_at_1 == pytest.approx((0 + 1 + 0 + 0) / 4)
    assert chosen.recall_at_3 == pytest.approx((0.5 + 1 + 0 + 0) / 4)
    assert chosen.recall_at_5 == chosen.recall_at_k == pytest.approx((0.5 + 1 + 1 + 0) / 4)
    assert chosen.recall_at_10 == pytest.approx((1 + 1 + 1 + 0) / 4)
    assert chosen.seconds_p50 == pytest.approx(0.35)
    assert chosen.seconds_p90 == pytest.approx(0.6)  # the 90th percentile of six copies each
    markdown = to_markdown(card)
    assert "### Ranks, ties and time" in markdown
    assert "| m | native-bm25 | bm25 | 5 | 36 | 12 (33%) | 12 | 25% | 38% | 62% | 75% | 62% |" in (
        markdown
    )
    out = io.StringIO()
    print_scorecard(card, Console(file=out, width=250, color_system=None))
    assert "Tool selection: ranks, ties and time" in out.getvalue()
    assert "<h3>Ranks, ties and time</h3>" in to_html(card)


def test_trials_recorded_before_selections_were_kept_leave_the_new_columns_empty(
    tmp_path: Path,
) -> None:
    (chosen,) = build_scorecard(engine=_engine(tmp_path), sweep_id="sw").selection
    assert (chosen.selections, chosen.tied, chosen.recall_at_k, chosen.seconds_p50) == (
        0,
        0,
        None,
        None,
    )
