"""The bundled model as agent and as judge: a real answer-quality run, and the anchor gate.

Slow (a few minutes); CI runs it. It checks that judging with a real model completes, is stored
faithfully and yields readable scores and variance statistics, not how good a 270M judge is (the
README records its sigma and anchor rho).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from sqlalchemy import text
from typer.testing import CliRunner

from mcp_farm.scheduler.cli.app import app
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
from tests.workers.model.test_real_models import _needs_llama, three_anchors

pytestmark = [pytest.mark.slow, pytest.mark.integration]

SWEEP = Path(__file__).resolve().parents[3] / "scenarios" / "sweeps" / "code.yaml"


def test_the_bundled_model_judges_a_real_run_twice_per_transcript(settings: Settings) -> None:
    _needs_llama()
    sweep = load_sweep(SWEEP).model_copy(
        update={
            "toolsets": ["baseline", "symbols"],
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
    assert len(rows) == 2 * 2 * 6  # trials × runs × criteria
    assert {r.judge_model for r in rows} == {"gemma3-270m-judge"}
    # Grammar-constrained decoding: the small judge's replies are readable.
    assert sum(r.score is not None for r in rows) >= len(rows) // 2
    answers = scorecard_of(engine=engine, sweep_id=plan.sweep_id).answers
    assert answers is not None
    (judge,) = answers.judges
    assert judge.runs == 2 and judge.sigma_criterion is not None and judge.sigma_criterion >= 0
    assert {r.prompt for r in answers.of("config")} == {"code+baseline", "code+symbols"}
    assert all(r.judge_s and r.judge_s > 0 for r in answers.of("config"))


def test_the_anchor_gate_runs_the_bundled_judge_and_records_its_verdict(
    settings: Settings, tmp_path: Path
) -> None:
    _needs_llama()
    db = settings.resolved_database_url()
    folder = str(three_anchors(tmp_path))
    result = CliRunner().invoke(
        app, ["anchors", "verify", folder, "--judge-from", str(SWEEP), "--db", db]
    )
    assert result.exit_code in (0, 1), result.output
    assert "ρ =" in result.output
    with make_engine(db).connect() as conn:
        check = conn.execute(text("select passed, rho from anchor_check")).one()
    assert check.rho is not None and -1 <= check.rho <= 1
    assert bool(check.passed) == (result.exit_code == 0)
