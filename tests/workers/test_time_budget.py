"""A slow machine is not a hung tool: the scenario's clock counts tools, servers and setup, and
stops while the model replies; each reply has the model's own limit (`request_timeout_s` ×
`time_scale`). The trial says which limit ended it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import Settings, TrialResult
from mcp_farm.workers.trial import execute_trial
from tests.helpers import trial

ENVINFO = Path(__file__).resolve().parent.parent / "servers" / "envinfo.py"
SLOW = Path(__file__).resolve().parent.parent / "servers" / "slow.py"


def _suite(tmp_path: Path) -> str:
    path = tmp_path / "budget.yaml"
    path.write_text(f"""
suite: budget
servers:
  - name: envinfo
    command: ["{{python}}", "{ENVINFO}"]
  - name: slow
    command: ["{{python}}", "{SLOW}"]
scenarios:
  - id: budget.digest
    version: 1
    tier: simple
    prompt: What is the digest of HOME?
    servers: [envinfo]
    time_limit_s: 4
    expect:
      - tool: variable_digest
        params: {{name: HOME}}
  - id: budget.hung
    version: 1
    tier: simple
    prompt: Fetch finance report 7.
    servers: [slow]
    time_limit_s: 2
    expect:
      - tool: fetch_report
        params: {{report_id: "7"}}
""")
    return str(path)


def _run(
    suite: str, index: int, script: list[dict[str, Any]], settings: Settings, **model: Any
) -> TrialResult:
    spec = trial(load_suite(suite).scenarios[index], script, suite=suite)
    spec = spec.model_copy(update={"model": spec.model.model_copy(update=model)})
    return anyio.run(execute_trial, spec, settings)


CALL = {"call": {"name": "variable_digest", "arguments": {"name": "HOME"}}}


def test_a_slow_model_past_the_scenarios_clock_still_passes(
    tmp_path: Path, settings: Settings
) -> None:
    # 5 s of model time against a 4 s scenario clock (which also covers the server's start,
    # so it cannot be much tighter on a loaded machine): the clock does not count it.
    script = [{**CALL, "think_s": 2.5}, {"answer": "done", "think_s": 2.5}]
    result = _run(_suite(tmp_path), 0, script, settings)
    assert result.outcome == "pass", result.detail
    assert result.model_s is not None and result.model_s >= 5
    assert result.provenance.time_scale == 1.0


def test_a_reply_past_the_models_own_limit_is_a_timeout_that_says_so(
    tmp_path: Path, settings: Settings
) -> None:
    script = [{**CALL, "think_s": 5}]
    result = _run(_suite(tmp_path), 0, script, settings, request_timeout_s=0.5)
    assert result.outcome == "timeout"
    assert result.stop_reason == "model_time_limit"
    assert result.detail == "the model gave no reply within 0.5 s (turn 1)"
    assert result.model_s is not None and result.model_s < 4  # cut off, not waited out


def test_a_time_scale_widens_the_models_limit_and_is_recorded(
    tmp_path: Path, settings: Settings
) -> None:
    script = [{**CALL, "think_s": 1.0}, {"answer": "done"}]
    result = _run(_suite(tmp_path), 0, script, settings, request_timeout_s=0.5, time_scale=4)
    assert result.outcome == "pass", result.detail
    assert result.provenance.time_scale == 4


def test_a_hung_tool_is_still_ended_by_the_scenarios_clock(
    tmp_path: Path, settings: Settings
) -> None:
    script = [{"call": {"name": "fetch_report", "arguments": {"report_id": "7"}}, "think_s": 0.5}]
    result = _run(_suite(tmp_path), 1, script, settings)
    assert result.outcome == "timeout"
    assert result.stop_reason == "time_limit"
    assert "2 s of tool, server and setup time" in result.detail
    assert result.latency_s < 30


def test_the_scorecard_says_which_limit_ended_each_timed_out_trial(
    tmp_path: Path, settings: Settings
) -> None:
    from rich.console import Console

    from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
    from mcp_farm.scheduler.scorecard.build import build_scorecard
    from mcp_farm.schema.db import init_db, make_engine
    from mcp_farm.workers.store.results import save_trial

    suite = _suite(tmp_path)
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    runs = [
        (0, [{**CALL, "think_s": 5}], {"request_timeout_s": 0.5}),
        (1, [{"call": {"name": "fetch_report", "arguments": {"report_id": "7"}}}], {}),
        (0, [CALL, {"answer": "done"}], {}),
    ]
    for index, script, model in runs:
        spec = trial(load_suite(suite).scenarios[index], script, suite=suite)
        spec = spec.model_copy(update={"model": spec.model.model_copy(update=model)})
        save_trial(engine=engine, spec=spec, result=anyio.run(execute_trial, spec, settings))
    card = build_scorecard(engine=engine, sweep_id="test-sweep")
    assert [extra.timeouts for extra in card.extras] == [{"model_reply": 1, "scenario_clock": 1}]
    console = Console(record=True, width=200)
    print_scorecard(card, console)
    assert "1 by the model's per-reply limit, 1 by the scenario's clock" in console.export_text()
