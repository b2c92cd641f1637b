"""Text no database here can hold alike (U+0000, lone surrogates) is stored the same on both.

PostgreSQL refuses NUL in text and lone surrogates in UTF-8; SQLite takes both. The store
replaces each by U+FFFD everywhere it writes, so a trial saves, and reads back identically,
on either database.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import (
    AnswerScore,
    Citation,
    JudgeScore,
    Message,
    ToolCallRecord,
    TrialResult,
)
from mcp_farm.schema.db import (
    init_db,
    make_engine,
)
from mcp_farm.workers.store.results import (
    REPLACEMENT,
    save_trial,
    storable,
    storable_model,
)
from tests.helpers import (
    fixed_provenance,
    ideal_script,
    trial,
)

SCENARIO = load_suite("basic").scenarios[0]
ODD = "a\x00b\ud800c\udfffd"
"""A NUL and both halves of a surrogate pair, each alone."""
STORED = f"a{REPLACEMENT}b{REPLACEMENT}c{REPLACEMENT}d"


def _odd_result(trial_id: str, sweep_id: str) -> TrialResult:
    now = datetime.now(UTC)
    arguments: dict[str, Any] = {"path": ODD, ODD: [ODD, {"k": ODD}]}
    return TrialResult(
        trial_id=trial_id,
        sweep_id=sweep_id,
        model_id="m",
        prompt_id="native",
        scenario_id=SCENARIO.id,
        tier=SCENARIO.tier,
        expected_tools=SCENARIO.expected_tools,
        repetition=0,
        outcome="output_mismatch",
        stop_reason="answer",
        detail=f"the answer {ODD} does not mention it",
        started_at=now,
        finished_at=now,
        latency_s=1.0,
        final_answer=ODD,
        transcript=[
            Message(role="user", content=ODD),
            Message(
                role="assistant",
                content=ODD,
                tool_calls=[{"id": "c0", "name": "read_file", "arguments": arguments}],
            ),
            Message(role="tool", content=ODD, tool_call_id="c0", name="read_file"),
        ],
        tool_calls=[
            ToolCallRecord(
                index=0,
                server="filesystem",
                tool="read_file",
                arguments=arguments,
                ok=False,
                error=ODD,
                result_text=ODD,
            )
        ],
        provenance=fixed_provenance(),
        answer=AnswerScore(
            trial_id=trial_id,
            sweep_id=sweep_id,
            scoring_id="run-x",
            outcome="output_mismatch",
            keyword_coverage=None,
            citations=[Citation(text=ODD, path="a.py", status="unresolved", detail=ODD)],
            grounding_rate=None,
            judge_quality=None,
            efficiency=1.0,
            fairness=0.5,
            tool_fluency=None,
            discoverability=None,
            adoption=0.0,
            judge_pins={"k": ODD},
            judgements=[
                JudgeScore(
                    run=0, step="s", criterion="c", score=None, normalized=None, rationale=ODD
                )
            ],
        ),
    )


def _read_back(engine: Engine, trial_id: str) -> dict[str, Any]:
    """Every text column the trial wrote, JSON columns decoded."""
    with engine.connect() as conn:
        row = conn.execute(
            text("select final_answer, detail, transcript_json from trial where trial_id = :t"),
            {"t": trial_id},
        ).one()
        call = conn.execute(
            text("select arguments_json, error from tool_call where trial_id = :t"),
            {"t": trial_id},
        ).one()
        score = conn.execute(
            text("select citations_json from answer_score where trial_id = :t"), {"t": trial_id}
        ).one()
        judged = conn.execute(
            text("select rationale, judge_pins_json from judgement where trial_id = :t"),
            {"t": trial_id},
        ).one()
    return {
        "final_answer": row.final_answer,
        "detail": row.detail,
        "transcript": json.loads(row.transcript_json),
        "arguments": json.loads(call.arguments_json),
        "error": call.error,
        "citations": json.loads(score.citations_json),
        "rationale": judged.rationale,
        "judge_pins": json.loads(judged.judge_pins_json),
    }


def _save_odd_trial(engine: Engine) -> dict[str, Any]:
    init_db(engine)
    spec = trial(SCENARIO, ideal_script(SCENARIO), sweep_id="odd-text")
    save_trial(engine=engine, spec=spec, result=_odd_result(spec.trial_id, spec.sweep_id))
    return _read_back(engine, spec.trial_id)


def _check(stored: dict[str, Any]) -> None:
    assert stored["final_answer"] == STORED
    assert stored["detail"] == f"the answer {STORED} does not mention it"
    assert stored["error"] == STORED
    assert stored["rationale"] == STORED
    assert stored["arguments"] == {"path": STORED, STORED: [STORED, {"k": STORED}]}
    assert [m["content"] for m in stored["transcript"]] == [STORED] * 3
    assert stored["transcript"][1]["tool_calls"][0]["arguments"] == stored["arguments"]
    assert stored["citations"][0]["text"] == STORED
    assert stored["judge_pins"] == {"k": STORED}


def test_nul_and_lone_surrogates_are_stored_as_replacement_characters_on_sqlite(
    tmp_path: Path,
) -> None:
    _check(_save_odd_trial(make_engine(f"sqlite:///{tmp_path / 'd' / 'farm.sqlite'}")))


@pytest.mark.integration
def test_nul_and_lone_surrogates_are_stored_the_same_on_postgres_as_on_sqlite(
    pg_engine: Engine, tmp_path: Path
) -> None:
    on_postgres = _save_odd_trial(pg_engine)
    _check(on_postgres)
    assert on_postgres == _save_odd_trial(make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}"))


def test_the_text_rule_keeps_everything_else_as_it_is() -> None:
    kept = {"emoji": "\U0001f600", "accents": "déjà vu", "escape": "\\u0000", "n": 1.5}
    assert storable(kept) == kept
    assert storable(("\x00", ["\ud83d\ude00"])) == [REPLACEMENT, [REPLACEMENT * 2]]


def _read_trial(engine: Engine, trial_id: str) -> dict[str, Any]:
    """The trial's row and its call's row, as read through their column types."""
    tables = SQLModel.metadata.tables
    with engine.connect() as conn:
        rows = {
            name: dict(
                conn.execute(select(tables[name]).where(tables[name].c.trial_id == trial_id))
                .one()
                ._mapping
            )
            for name in ("trial", "tool_call")
        }
    return rows


@pytest.mark.integration
def test_an_unjudged_trial_reads_back_the_same_from_postgres_as_from_sqlite(
    pg_engine: Engine, tmp_path: Path
) -> None:
    """Unjudged trials take PostgreSQL's one-round-trip path (mcp_farm.workers.store.pgpipe): the same text
    rule, the same values in every column (timestamps included) as SQLAlchemy writes."""
    spec = trial(SCENARIO, ideal_script(SCENARIO), sweep_id="odd-text")
    result = _odd_result(spec.trial_id, spec.sweep_id).model_copy(update={"answer": None})
    stored = []
    for engine in (pg_engine, make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")):
        init_db(engine)
        save_trial(engine=engine, spec=spec, result=result)
        stored.append(_read_trial(engine, spec.trial_id))
    on_postgres, on_sqlite = stored
    assert on_postgres["trial"]["final_answer"] == STORED
    assert json.loads(on_postgres["tool_call"]["arguments_json"])["path"] == STORED
    assert on_postgres == on_sqlite


def test_a_result_with_nothing_to_replace_is_stored_as_it_is_without_a_copy() -> None:
    clean = _odd_result("t", "s").model_copy(update={"answer": None})
    clean = clean.model_copy(update={"final_answer": "plain", "transcript": [], "detail": ""})
    clean = clean.model_copy(update={"tool_calls": []})
    assert storable_model(clean) is clean
    odd = clean.model_copy(update={"final_answer": ODD})
    assert storable_model(odd).final_answer == STORED
