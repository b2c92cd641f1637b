"""An agent's tokens and time in the model, where its model calls did not pass the farm, are
"not measured" in the scorecard and every place that shows them, never 0; the farm's own model
rows beside them keep their numbers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console
from sqlalchemy import text
from sqlalchemy.engine import Engine

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.submission.embedded import model_share
from mcp_farm.scheduler.view.trial_page import summary_value
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.schema.scorecard import Scorecard

CONFIGS = [("small", "native"), ("agent", "native")]


NOT_MEASURED_SQL = (
    "update trial set tokens_prompt = 0, tokens_completion = 0, tokens_measured = false, "
    "model_s = null, first_token_s = null where model_id = 'agent'"
)
"""The agent's rows as an agent whose model calls did not pass the farm records them."""


def _card(tmp_path: Path, engine: Engine | None = None) -> Scorecard:
    if engine is None:
        engine = make_engine(f"sqlite:///{tmp_path / 'card.sqlite'}")
    init_db(engine)
    load(engine, "sw", trials("sw", CONFIGS, scenarios(4, seed=3), 2, lambda *_: 0.5, 7))
    with engine.begin() as conn:
        conn.execute(text(NOT_MEASURED_SQL))
    return build_scorecard(engine=engine, sweep_id="sw")


def _speed_row(card: Scorecard, model: str) -> str:
    console = Console(width=240, no_color=True)
    with console.capture() as captured:
        print_scorecard(card, console)
    speed = captured.get().split("Speed and tokens", 1)[1].split("Per tool", 1)[0]
    lines = [" ".join(line.replace("│", " ").split()) for line in speed.splitlines()]
    return next(line for line in lines if line.startswith(f"{model} "))


def test_a_config_whose_trials_measured_no_tokens_has_none_not_zero(tmp_path: Path) -> None:
    card = _card(tmp_path)
    extras = {x.model: x for x in card.extras}
    assert (extras["agent"].tokens_prompt, extras["agent"].tokens_completion) == (None, None)
    assert extras["agent"].tokens_per_s is None
    assert (extras["small"].tokens_prompt, extras["small"].tokens_completion) == (
        400 * 8,
        40 * 8,
    )
    # The JSON report (the card as it is) says null, not 0.
    assert '"tokens_prompt":null' in card.model_dump_json()


@pytest.mark.integration
def test_postgres_and_sqlite_leave_the_same_unmeasured_tokens_out(
    tmp_path: Path, pg_engine: Engine
) -> None:
    lite, pg = _card(tmp_path), _card(tmp_path, pg_engine)

    def speed(card: Scorecard) -> list[tuple[object, ...]]:
        return [
            (x.model, x.tokens_prompt, x.tokens_completion, x.first_token.n) for x in card.extras
        ]

    assert speed(lite) == speed(pg)
    for x, y in zip(lite.extras, pg.extras, strict=True):  # tok/s summed in another order
        assert x.tokens_per_s == y.tokens_per_s or x.tokens_per_s == pytest.approx(y.tokens_per_s)
    assert {x.model: x.tokens_prompt for x in pg.extras} == {"agent": None, "small": 3200}


def test_the_terminal_speed_table_says_not_measured_for_the_agent_only(tmp_path: Path) -> None:
    card = _card(tmp_path)
    assert _speed_row(card, "agent").count("not measured") == 4
    small = _speed_row(card, "small")
    assert "not measured" not in small
    assert "3,200" in small and "320" in small


def test_the_trial_page_says_not_measured_for_an_agent_row() -> None:
    agent = SimpleNamespace(tokens_prompt=0, tokens_completion=0, tokens_measured=False)
    agent.model_s = None
    model = SimpleNamespace(tokens_prompt=12, tokens_completion=3, tokens_measured=True)
    model.model_s = 0.25
    assert summary_value(agent, "tokens") == "not measured"
    assert summary_value(agent, "model_s") == "not measured"
    assert summary_value(model, "tokens") == "12 / 3"
    assert summary_value(model, "model_s") == "250ms"


def test_a_run_of_agents_alone_says_its_time_in_the_model_was_not_measured() -> None:
    assert model_share(None, 12.0, unmeasured=16).startswith(
        "time in the model not measured (12.0 s wall)"
    )
    assert model_share(3.0, 12.0).startswith("time in the model 3.0 s of 12.0 s wall (25%)")
