"""A scenario pattern that backtracks without end, met in a real `farm run`: the trial ends as
an infra_error naming the scenario and the field within its budget, and the run goes on."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_farm.scenarios import (
    load_suite,
    suite_path,
)
from mcp_farm.schema import MATCH_BUDGET_S
from tests.distributed.conftest import ROOT
from tests.helpers import ideal_script

pytestmark = pytest.mark.faults

SCENARIO = next(s for s in load_suite("basic").scenarios if s.id == "fs.budget-total")
CATASTROPHIC = "(a|aa)+$"
"""No repeat inside a repeat, so the load-time check lets it through; on forty `a`s and a `!`
it backtracks for longer than any sweep."""
RUN_LIMIT_S = 180
"""A regression hangs here, not in CI forever: the subprocess is killed and the test fails."""


def _suite(tmp_path: Path) -> Path:
    data: dict[str, Any] = yaml.safe_load(suite_path("basic").read_text(encoding="utf-8"))
    (scenario,) = [s for s in data["scenarios"] if s["id"] == SCENARIO.id]
    scenario["final_answer"] = CATASTROPHIC
    scenario.pop("example_answer", None)
    data["scenarios"] = [scenario]
    path = tmp_path / "catastrophic.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_a_catastrophic_final_answer_ends_the_trial_as_an_infra_error_not_a_hang(
    tmp_path: Path,
) -> None:
    script = ideal_script(SCENARIO)
    script[-1] = {"answer": "a" * 4000 + "!"}
    sweep = {
        "name": "catastrophic",
        "models": [{"id": "ideal", "adapter": "scripted", "model": "script", "script": script}],
        "prompts": ["native"],
        "scenarios": {"suites": [str(_suite(tmp_path))]},
        "repetitions": 1,
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep), encoding="utf-8")
    data = tmp_path / "data"

    started = time.perf_counter()
    argv = [sys.executable, "-m", "mcp_farm.scheduler.cli.app", "run", str(path)]
    subprocess.run(
        [*argv, "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT_S,
        cwd=ROOT,
    )
    assert time.perf_counter() - started < RUN_LIMIT_S

    rows = sqlite3.connect(data / "farm.sqlite").execute(
        "select status, outcome, stop_reason, detail from trial"
    )
    ((status, outcome, stop, detail),) = rows.fetchall()
    assert (status, outcome, stop) == ("done", "infra_error", "infra_error")
    assert detail == (
        f"cannot grade: scenario {SCENARIO.id}: final_answer /{CATASTROPHIC}/ ran past its "
        f"{MATCH_BUDGET_S:g} s budget on 4,001 characters"
    )
