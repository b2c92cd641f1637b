"""`farm rescore` grades a stored trial as the live run graded it: with the sweep's settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from sqlalchemy import text

from mcp_farm.scheduler.submission.embedded import run_embedded
from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.scheduler.submission.queries import record_scoring
from mcp_farm.schema import (
    JudgeSettings,
    Message,
    ScenarioSelection,
    Settings,
    SweepSpec,
    load_task,
)
from mcp_farm.schema.db import (
    ToolCallRow,
    init_db,
    make_engine,
)
from mcp_farm.workers.answer.rescore import _calls
from mcp_farm.workers.session import shown_text
from tests.helpers import scripted

SUITE = """
suite: rescored
scenarios:
  - id: rescored.groceries
    version: 1
    tier: simple
    prompt: What is on my groceries note?
    servers: [notes]
    expect:
      - tool: read_note
        params: {note_id: groceries}
        example: {note_id: groceries}
    answer:
      keywords: [milk]
      rubric: code-answer
"""

# A wrong read first, then the right one: lenient counting lets it pass, strict does not.
WRONG_THEN_RIGHT: list[dict[str, Any]] = [
    {"call": {"name": "read_note", "arguments": {"note_id": "gift-ideas"}}},
    {"call": {"name": "read_note", "arguments": {"note_id": "groceries"}}},
    {"answer": "Coconut milk, among other things."},
]


def test_a_strict_sweep_is_rescored_strict(tmp_path: Path, settings: Settings) -> None:
    suite = tmp_path / "rescored.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    sweep = SweepSpec(
        name="strict-rescore",
        models=[scripted(WRONG_THEN_RIGHT, "agent")],
        prompts=["native"],
        scenarios=ScenarioSelection(suites=[str(suite)]),
        repetitions=1,
        paraphrases="verbatim",
        calls="strict",
    )
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    plan = expand(sweep, "test")
    run_embedded(plan=plan, settings=settings, engine=engine, console=Console(quiet=True))
    with engine.begin() as conn:
        (trial_id, recorded) = conn.execute(
            text("select trial_id, outcome from trial where sweep_id = :s"), {"s": plan.sweep_id}
        ).one()
        scoring = record_scoring(conn, plan.sweep_id, JudgeSettings(), "rescore", "test")
    assert recorded == "wrong_params"
    summary = load_task("farm.rescore_trial")(
        {"trial_id": trial_id, "scoring_id": scoring, "judge": JudgeSettings().model_dump()},
        settings,
    )
    assert (summary.outcome, summary.recorded_outcome) == ("wrong_params", "wrong_params")


def test_a_rescored_result_is_the_shown_text_without_the_cut_notice() -> None:
    # The notice's count (9 characters left out) is no part of the result: a chained 9 must
    # not pass for a value of it.
    shown = shown_text("total 17, items 4", 8)
    row = ToolCallRow(trial_id="t", idx=0, server="s", tool="sum", arguments_json="{}", ok=True)
    transcript = [Message(role="tool", content=shown, tool_call_id="c0", name="sum")]
    (call,) = _calls([row], transcript)
    assert call.result_text == "total 17"
    assert shown != call.result_text
