"""A trial that cannot run ends recorded as an infra_error; it never stays `running`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import text

from mcp_farm.scenarios import (
    load_suite,
    suite_path,
)
from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.scheduler.submission.queries import record_plan
from mcp_farm.schema import (
    Settings,
    SweepSpec,
)
from mcp_farm.schema.db import (
    init_db,
    make_engine,
)
from mcp_farm.workers.node.tasks import run_trial
from tests.helpers import (
    ideal_script,
    scripted,
)

SCENARIO = next(s for s in load_suite("basic").scenarios if s.id == "fs.budget-total")


def _one_scenario_suite(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(suite_path("basic").read_text(encoding="utf-8"))
    data["scenarios"] = [s for s in data["scenarios"] if s["id"] == SCENARIO.id]
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return data


def _rewrite(path: Path, data: dict[str, Any]) -> None:
    """Write the suite again under a later modification time (the loader's cache key): two
    writes within one filesystem clock tick would otherwise look unchanged."""
    before = path.stat().st_mtime_ns
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_a_scenario_broken_after_planning_ends_its_trial_as_an_infra_error(
    tmp_path: Path, settings: Settings
) -> None:
    suite = tmp_path / "edited.yaml"
    data = _one_scenario_suite(suite)
    sweep = SweepSpec(
        name="edited",
        models=[scripted(ideal_script(SCENARIO))],
        prompts=["native"],
        scenarios={"suites": [str(suite)]},  # type: ignore[arg-type]
        repetitions=1,
    )
    plan = expand(sweep, "sweep")
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    record_plan(engine=engine, plan=plan)
    # Between planning and running, someone saves the suite with a broken pattern.
    data["scenarios"][0]["final_answer"] = "([a-z"
    _rewrite(suite, data)

    summary = run_trial(plan.trials[0].model_dump(mode="json"), settings)

    assert summary.outcome == "infra_error"
    with engine.connect() as conn:
        row = conn.execute(text("select status, outcome, detail from trial")).one()
    assert (row.status, row.outcome) == ("done", "infra_error")
    assert "final_answer: invalid regular expression" in row.detail and str(suite) in row.detail
