"""An agent's tokens and time in the model, where its model calls did not pass the farm, are
"not measured" in the scorecard and every place that shows them, never 0; the farm's own model
rows beside them keep their numbers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.submission.embedded import model_share
from mcp_farm.scheduler.view.trial_page import summary_value
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.schema.scorecard import Scorecard

CONFIGS = [("small", "native"), ("agent", "native")]


def _card(tmp_path: Path) -> Scorecard:
    engine = make_engine(f"sqlite:///{tmp_path / 'card.sqlite'}")
    init_db(engine)
    rows = []
    for row, calls in trials("sw", CONFIGS, scenarios(4, seed=3), 2, lambda *_: 0.5, 7):
        row["tokens_measured"] = True  # one batch insert: every row names the column
        if row["model_id"] == "agent":
            row.update(
                tokens_prompt=0,
                tokens_completion=0,
                tokens_measured=False,
                model_s=None,
                first_token_s=None,
            )
        rows.append((row, calls))
    load(engine, "sw", iter(rows))
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
    assert model_share(None, 12.0).startswith("time in the model not measured (12.0 s wall)")
    assert model_share(3.0, 12.0).startswith("time in the model 3.0 s of 12.0 s wall (25%)")
