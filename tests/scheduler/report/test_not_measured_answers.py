"""An agent's reasoning tokens, where its model calls did not pass the farm, are "not measured"
in its answer scores, their aggregation and every place that shows them, never 0; the farm's own
model rows beside them keep their numbers."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from sqlalchemy import insert, text
from sqlalchemy.engine import Engine

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.report.answer_tables import answer_tables
from mcp_farm.scheduler.report.terminal.answers import print_answers
from mcp_farm.scheduler.scorecard.answers import answer_quality
from mcp_farm.scheduler.view.queries.trial import trial_record
from mcp_farm.scheduler.view.trial_page import answer_tokens
from mcp_farm.schema import AnswerScore, JudgeSettings
from mcp_farm.schema.db import ScoringRow, init_db, make_engine
from mcp_farm.schema.scorecard import AnswerQuality
from mcp_farm.workers.store.results import write_answer

CONFIGS = [("small", "native"), ("agent", "native"), ("relayed", "native")]
SCORING = "pass-one"


def _score(trial_id: str, reasoning: int | None) -> AnswerScore:
    return AnswerScore(
        trial_id=trial_id,
        sweep_id="sw",
        scoring_id=SCORING,
        outcome="pass",
        keyword_coverage=1.0,
        grounding_rate=None,
        judge_quality=None,
        efficiency=0.5,
        fairness=0.5,
        tool_fluency=1.0,
        discoverability=1.0,
        adoption=1.0,
        tokens_reasoning=reasoning,
        tokens_tool_io=30,
        estimated=["tool_io"],
    )


def _engine(tmp_path: Path) -> tuple[Engine, dict[str, list[str]]]:
    """Two trials per model: `small` (the farm's loop) measured its reasoning; `agent` measured
    none; `relayed` (an agent through the pass-through) measured one trial of two."""
    engine = make_engine(f"sqlite:///{tmp_path / 'answers.sqlite'}")
    init_db(engine)
    load(engine, "sw", trials("sw", CONFIGS, scenarios(2, seed=3), 1, lambda *_: 0.5, 7))
    judge = JudgeSettings().model_dump(mode="json")
    with engine.begin() as conn:
        conn.execute(
            insert(ScoringRow).values(
                scoring_id=SCORING,
                sweep_id="sw",
                kind="run",
                created_at=datetime.now(UTC),
                config_json=json.dumps({"judge": judge}),
            )
        )
        found = conn.execute(text("select trial_id, model_id from trial order by trial_id"))
        ids: dict[str, list[str]] = {}
        for trial_id, model in found:
            ids.setdefault(model, []).append(trial_id)
        for model, members in ids.items():
            for i, trial_id in enumerate(members):
                measured = model == "small" or (model == "relayed" and i == 0)
                score = _score(trial_id, 40 if measured else None)
                write_answer(conn, score, model, "native", "s")
    return engine, ids


def _answers(engine: Engine) -> AnswerQuality:
    with engine.connect() as conn:
        found = answer_quality(conn, "sw")
    assert found is not None
    return found


def test_an_unmeasured_answer_score_is_stored_as_zero_flagged_not_measured(
    tmp_path: Path,
) -> None:
    engine, ids = _engine(tmp_path)
    with engine.connect() as conn:
        rows = conn.execute(
            text("select trial_id, tokens_reasoning, tokens_measured from answer_score")
        ).fetchall()
    stored = {trial_id: (n, bool(flag)) for trial_id, n, flag in rows}
    assert {stored[t] for t in ids["agent"]} == {(0, False)}
    assert {stored[t] for t in ids["small"]} == {(40, True)}


def test_reasoning_tokens_sum_only_the_measured_scores_and_are_null_where_none_were(
    tmp_path: Path,
) -> None:
    engine, _ = _engine(tmp_path)
    configs = {r.model: r for r in _answers(engine).of("config")}
    assert configs["agent"].tokens_reasoning is None
    assert configs["relayed"].tokens_reasoning == 40  # one trial measured, one not
    assert configs["small"].tokens_reasoning == 80
    # Tool I/O is the farm's own count (the recorded calls), measured for agents too.
    assert {r.tokens_tool_io for r in configs.values()} == {60}
    assert '"tokens_reasoning":null' in configs["agent"].model_dump_json()


def test_the_phase_table_says_not_measured_for_the_agent_only(tmp_path: Path) -> None:
    engine, _ = _engine(tmp_path)
    answers = _answers(engine)
    table = next(t for t in answer_tables(answers) if "tokens by phase" in t.title)
    reasoning = table.heads.index("reasoning")
    cells = {cells[0]: cells[reasoning] for cells in table.rows}
    assert cells == {"agent": "not measured", "relayed": "40", "small": "80"}
    console = Console(width=240, no_color=True)
    with console.capture() as captured:
        print_answers(answers, console)
    phases = captured.get().split("tokens by phase", 1)[1].split("~ marks", 1)[0]
    lines = [" ".join(line.replace("│", " ").split()) for line in phases.splitlines()]
    assert next(line for line in lines if "not measured" in line).startswith("agent ")
    assert sum("not measured" in line for line in lines) == 1


def test_the_trial_page_and_trial_show_say_not_measured_for_an_agent_score(
    tmp_path: Path,
) -> None:
    engine, ids = _engine(tmp_path)
    agent = trial_record(engine=engine, trial_id=ids["agent"][0])
    small = trial_record(engine=engine, trial_id=ids["small"][0])
    assert agent is not None and small is not None
    assert answer_tokens(agent.answers[0]) == (
        "reasoning not measured, tool I/O ~30, verification 0"
    )
    assert answer_tokens(small.answers[0]) == "reasoning 40, tool I/O ~30, verification 0"
