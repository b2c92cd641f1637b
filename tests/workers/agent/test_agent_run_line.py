"""The line that ends an embedded run, in a run that mixes agents and models: its time in the
model is the models' alone, and it says how many agent trials were not measured rather than
implying a total; a run without agents ends as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.submission.embedded import model_share
from mcp_farm.workers.node.runtime import close_runtime
from tests.helpers import ideal_script

SCENARIO = next(s for s in load_suite("basic").scenarios if s.id == "fs.budget-total")
ANSWERS = "import sys; sys.stdin.read(); print('done')"
"""An agent whose model calls, if any, never pass the farm: its time in the model is unseen."""


def _last_line(tmp_path: Path, models: list[dict[str, Any]]) -> str:
    sweep = {
        "name": "mixed",
        "models": models,
        "prompts": ["native"],
        "scenarios": {"ids": [SCENARIO.id]},
        "repetitions": 2,
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    try:
        # Wide enough that the closing line is one line (CI's terminal has no width of its own).
        args = ["run", str(path), "--data-dir", str(tmp_path / "data")]
        done = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    finally:
        close_runtime()
    assert done.exit_code == 0, done.output
    return next(line for line in done.output.splitlines() if "time in the model" in line)


IDEAL = {"id": "ideal", "adapter": "scripted", "model": "s", "script": ideal_script(SCENARIO)}
AGENT = {
    "id": "answers",
    "adapter": "agent",
    "model": "answers",
    "agent": {"command": ["{python}", "-c", ANSWERS]},
}


def test_a_run_of_agents_and_models_says_its_agent_trials_were_not_measured(
    tmp_path: Path,
) -> None:
    line = _last_line(tmp_path, [IDEAL, AGENT])
    assert line.startswith("time in the model 0.0 s of ")
    assert "(2 agent trials not measured)" in line
    assert "the rest was the farm and the agents" in line


def test_a_run_without_agents_ends_with_the_line_it_always_had(tmp_path: Path) -> None:
    line = _last_line(tmp_path, [IDEAL])
    assert line.startswith("time in the model 0.0 s of ")
    assert line.endswith(
        "; the rest was the farm: loading the model, starting servers, tool calls, grading, storing"
    )
    assert "not measured" not in line


def test_the_closing_line_counts_one_agent_trial_or_none_measured() -> None:
    assert "(1 agent trial not measured)" in model_share(3.0, 12.0, unmeasured=1)
    assert model_share(3.0, 12.0).startswith("time in the model 3.0 s of 12.0 s wall (25%); ")
    assert model_share(None, 12.0, unmeasured=4).startswith(
        "time in the model not measured (12.0 s wall)"
    )
    # No trial reached a model (none could run), and no agent ran: 0 s, as before.
    assert model_share(None, 12.0).startswith("time in the model 0.0 s of 12.0 s wall (0%); ")
