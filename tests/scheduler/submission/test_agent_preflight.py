"""An embedded run checks that each agent target's command is on this machine before any trial
runs, and refuses naming it; --no-preflight skips the check, and a submitted sweep is left to
the workers, where its agents run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from mcp_farm.scheduler.cli.app import INFRA_ONLY, app
from mcp_farm.scheduler.cli.common import preflight
from mcp_farm.scheduler.submission.preflight import PreflightError, check_agents_here
from mcp_farm.schema import SweepSpec, get_settings
from tests.scheduler.submission.test_preflight import trial_count

MISSING = "no-such-agent-cmd"


def agent(command: list[str]) -> dict[str, Any]:
    return {
        "id": "my-agent",
        "adapter": "agent",
        "model": "my-agent/v3",
        "agent": {"command": command, "time_limit_s": 30},
    }


def spec(command: list[str]) -> dict[str, Any]:
    return {
        "name": "agent-check",
        "models": [agent(command)],
        "prompts": ["native"],
        "scenarios": {"ids": ["fs.budget-total"]},
        "repetitions": 1,
    }


def sweep(command: list[str]) -> SweepSpec:
    return SweepSpec.model_validate(spec(command))


def farm_run(tmp_path: Path, command: list[str], *flags: str) -> Result:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec(command)))
    args = ["run", str(path), "--data-dir", str(tmp_path / "data"), *flags]
    return CliRunner().invoke(app, args, env={"COLUMNS": "200"})


def test_an_embedded_run_refuses_a_missing_command_naming_it_before_any_trial(
    tmp_path: Path,
) -> None:
    done = farm_run(tmp_path, [MISSING, "{mcp_config}"])
    assert isinstance(done.exception, PreflightError)  # `farm` prints it and exits 2
    said = str(done.exception)
    assert "agent target 'my-agent'" in said and f"'{MISSING}'" in said
    assert "this machine's PATH" in said and "Install the command on this machine" in said
    assert "--no-preflight" in said
    assert trial_count(tmp_path / "data") == 0


def test_a_command_filled_in_from_python_passes() -> None:
    check_agents_here(sweep(["{python}", "-m", "x", "{mcp_config}"]), os.environ)


def test_no_preflight_lets_the_trials_run_and_fail_on_their_own(tmp_path: Path) -> None:
    done = farm_run(tmp_path, [MISSING], "--no-preflight")
    assert done.exit_code == INFRA_ONLY, done.output
    assert trial_count(tmp_path / "data") == 1


def test_a_submitted_sweep_leaves_agent_commands_to_the_workers() -> None:
    settings = get_settings().model_copy(update={"preflight": True})
    preflight(sweep([MISSING]), settings, None)  # as `farm sweep submit` calls it
    with pytest.raises(PreflightError, match=MISSING):
        preflight(sweep([MISSING]), settings, None, agents=True)  # as `farm run` does
