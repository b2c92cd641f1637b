"""The bundled model as agent and as judge: a real answer-quality run.

Slow (a few minutes); CI runs it. It checks that judging with a real model completes, is stored
faithfully and yields readable scores and variance statistics, not how good a 270M judge is (the
README records its sigma and anchor rho). The anchor gate with a real judge runs once, through
an OpenAI-compatible endpoint (tests/workers/model/test_real_models.py): the gate's own path is
the same for every adapter (tests/scheduler/cli/test_anchors.py, `--judge-from`), and the bundled
judge's replies are this file's run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from sqlalchemy import text

from mcp_farm.scheduler.scorecard.aggregate import scorecard_of
from mcp_farm.scheduler.submission.embedded import run_embedded
from mcp_farm.scheduler.submission.expand import (
    expand,
    load_sweep,
)
from mcp_farm.schema import (
    ScenarioSelection,
    Settings,
)
from mcp_farm.schema.db import (
    init_db,
    make_engine,
)
from tests.workers.model.test_real_models import _needs_llama

pytestmark = [pytest.mark.slow, pytest.mark.integration]

SWEEP = Path(__file__).resolve().parents[3] / "scenarios" / "sweeps" / "code.yaml"


def test_the_bundled_model_judges_a_real_run_twice_per_transcript(settings: Settings) -> None:
    _needs_llama()
    sweep = load_sweep(SWEEP).model_copy(
        update={
            # One arm, the no-MCP baseline (one reply, no tool turns): the judge reads only the
            # answer's prose, so an arm with tools would be judged the same way, after minutes
            # more of the model (the arms' split is the scripted tests').
            "toolsets": ["baseline"],
            "scenarios": ScenarioSelection(suites=["code"], ids=["code.where.sentinels"]),
        }
    )
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    plan = expand(sweep, str(SWEEP))
    run_embedded(plan=plan, settings=settings, engine=engine, console=Console(quiet=True))
    with engine.connect() as conn:
        rows = conn.execute(text("select judge_model, rubric_hash, score from judgement")).all()
        outcomes = conn.execute(text("select outcome from trial")).scalars().all()
    assert "infra_error" not in outcomes
    assert len(rows) == 1 * 2 * 6  # trials × runs × criteria
    assert {r.judge_model for r in rows} == {"gemma3-270m-judge"}
    # Grammar-constrained decoding: the small judge's replies are readable.
    assert sum(r.score is not None for r in rows) >= len(rows) // 2
    answers = scorecard_of(engine=engine, sweep_id=plan.sweep_id).answers
    assert answers is not None
    (judge,) = answers.judges
    assert judge.runs == 2 and judge.sigma_criterion is not None and judge.sigma_criterion >= 0
    assert {r.prompt for r in answers.of("config")} == {"code+baseline"}
    assert all(r.judge_s and r.judge_s > 0 for r in answers.of("config"))
