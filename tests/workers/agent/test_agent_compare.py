"""`farm compare` and `farm report` over a stored sweep with agent rows: an agent against a
model through the farm's loop, and two agents, compare like any two models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from bench.synthetic import load
from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.scorecard.compare import Side, compare
from mcp_farm.schema import ModelTarget, Settings, TrialSpec
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.workers.store.results import save_trial
from mcp_farm.workers.trial import execute_trial
from tests.helpers import ideal_script, trial

SCENARIOS = load_suite("basic").scenarios[:2]
SWEEP = "agents-vs-model"
SILENT = ["{python}", "-c", "import sys; sys.stdin.read(); print('I cannot help.')"]


def _agent(model_id: str, command: list[str], script: Path | None) -> ModelTarget:
    agent: dict[str, Any] = {"command": command}
    if script is not None:
        agent["env"] = {"FARM_AGENT_SCRIPT": str(script)}
    return ModelTarget.model_validate(
        {"id": model_id, "adapter": "agent", "model": model_id, "agent": agent}
    )


def _with_model(spec: TrialSpec, model: ModelTarget) -> TrialSpec:
    fields = spec.model_dump(mode="json", exclude={"trial_id"})
    return TrialSpec.model_validate({**fields, "model": model.model_dump(mode="json")})


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Engine, str]:
    """One sweep, two basic scenarios × two repetitions of: the farm's scripted ideal
    (`scripted`), the scripted agent process with the same script (`ideal-agent`), and an
    agent that answers without a call (`silent-agent`)."""
    folder = tmp_path_factory.mktemp("compare")
    url = f"sqlite:///{folder / 'farm.sqlite'}"
    settings = Settings(data_dir=folder / "data", database_url=url, server_start_timeout_s=20.0)
    engine = make_engine(url)
    init_db(engine)
    load(engine, SWEEP, iter(()))
    scripted_agent = ["{python}", "-m", "mcp_farm.scenarios.agents.scripted"]
    for scenario in SCENARIOS:
        script = ideal_script(scenario)
        path = folder / f"{scenario.id}.json"
        path.write_text(json.dumps(script), encoding="utf-8")
        for rep in range(2):
            spec = trial(scenario, script, sweep_id=SWEEP, repetition=rep)
            for model in (
                None,
                _agent("ideal-agent", scripted_agent, path),
                _agent("silent-agent", SILENT, None),
            ):
                # Validated anew, so each target's trial gets its own id.
                one = spec if model is None else _with_model(spec, model)
                result = anyio.run(execute_trial, one, settings)
                save_trial(engine=engine, spec=one, result=result)
    return engine, url


def _farm(url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [*args, "--db", url], env={"COLUMNS": "220"})
    return result.exit_code, result.output


def test_an_agent_compares_with_the_same_ideal_through_the_farms_loop_as_the_same(
    stored: tuple[Engine, str],
) -> None:
    engine, url = stored
    found = compare(
        engine,
        Side.parse(f"{SWEEP}@scripted"),
        Side.parse(f"{SWEEP}@ideal-agent"),
        ["config", "scenario"],
    )
    config = next(c for c in found if c.dimension == "config")
    assert (config.diff.a_rate, config.diff.b_rate, config.diff.a_n) == (1.0, 1.0, 4)
    code, shown = _farm(url, "compare", f"{SWEEP}@scripted", f"{SWEEP}@ideal-agent", "--all")
    assert code == 0, shown
    assert "0 regression(s)" in shown


def test_two_agents_compare_and_the_one_that_never_calls_is_worse(
    stored: tuple[Engine, str],
) -> None:
    engine, url = stored
    found = compare(
        engine,
        Side.parse(f"{SWEEP}@ideal-agent"),
        Side.parse(f"{SWEEP}@silent-agent"),
        ["config"],
    )
    (config,) = found
    assert (config.diff.a_rate, config.diff.b_rate) == (1.0, 0.0)
    code, shown = _farm(url, "compare", f"{SWEEP}@ideal-agent", f"{SWEEP}@silent-agent", "--all")
    assert code == 0, shown
    assert "silent-agent" in shown


def test_the_report_of_a_sweep_with_agents_says_their_tokens_were_not_measured(
    stored: tuple[Engine, str],
) -> None:
    _engine, url = stored
    code, shown = _farm(url, "report", SWEEP)
    assert code == 0, shown
    assert "not measured" in shown
    for fmt in ("md", "junit", "html"):
        code, shown = _farm(url, "report", SWEEP, "--format", fmt)
        assert code == 0 and "ideal-agent" in shown and "silent-agent" in shown, fmt
    code, shown = _farm(url, "report", SWEEP, "--format", "json")
    extras = {x["model"]: x for x in json.loads(shown)["extras"]}
    assert extras["ideal-agent"]["tokens_prompt"] is None
    assert extras["scripted"]["tokens_prompt"] is not None
