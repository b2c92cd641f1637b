"""A trial retried after an infrastructure failure says why in the worker's log: Celery's retry
line names the server whose start failed and how, not only "Retry in 2.0s"."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import pytest

import mcp_farm.workers.mcp.pool.lending
from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.submission.expand import expand
from mcp_farm.scheduler.submission.queries import record_plan
from mcp_farm.schema import Settings, SweepSpec
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.workers.mcp.pool import Launch
from mcp_farm.workers.node.celery_app import RETRY_REASON_CHARS, create_app, retry_reason
from mcp_farm.workers.node.runtime import close_runtime
from tests.helpers import ideal_script, scripted

SCENARIO = next(s for s in load_suite("basic").scenarios if s.id == "fs.budget-total")


def test_a_retried_trial_logs_which_server_start_failed_and_why(
    settings: Settings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = settings.model_copy(update={"infra_retries": 1, "retry_backoff_s": 0.0})
    sweep = SweepSpec(
        name="retried",
        models=[scripted(ideal_script(SCENARIO))],
        prompts=["native"],
        scenarios={"ids": [SCENARIO.id]},  # type: ignore[arg-type]
        repetitions=2,  # the trial run is not the sweep's last: no aggregate is published
    )
    plan = expand(sweep, "sweep")
    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    record_plan(engine=engine, plan=plan)
    gone = tmp_path / "gone" / "server"
    real = mcp_farm.workers.mcp.pool.lending.launch

    def missing(*args: Any) -> Launch:  # as a server start fails when its program is gone
        return dataclasses.replace(real(*args), argv=[str(gone)])

    monkeypatch.setattr(mcp_farm.workers.mcp.pool.lending, "launch", missing)
    task = create_app(settings).tasks["farm.run_trial"]
    try:
        with caplog.at_level(logging.INFO, logger="celery.app.trace"):
            # Eagerly, as the retry path of the task is what is tested: the retry is applied
            # at once, and its last attempt records the trial as an infra_error.
            done = task.apply(args=[plan.trials[0].model_dump(mode="json")])
    finally:
        close_runtime()
    assert str(done.get()).startswith("infra_error")
    retried = [r.getMessage() for r in caplog.records if " retry: " in r.getMessage()]
    assert len(retried) == 1, [r.getMessage() for r in caplog.records]
    assert "Retry in 0.0s: infrastructure attempt 1 of 2 failed: " in retried[0]
    assert "MCP server 'filesystem' failed to start: " in retried[0]
    assert f"No such file or directory: '{gone}'" in retried[0]


def test_a_retry_reason_is_one_line_of_bounded_length() -> None:
    reason = retry_reason("MCP server 'x' failed to start:\n  " + "why " * 400, 0, 3)
    assert reason.startswith("infrastructure attempt 1 of 4 failed: MCP server 'x' failed to")
    assert "\n" not in reason and len(reason) == RETRY_REASON_CHARS
