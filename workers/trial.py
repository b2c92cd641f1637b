"""Running one trial end to end, as named stages (docs/architecture.md, "One trial's stages"):
connect, set up, shape the tool list, converse and probe, in one session on one connection
under the scenario's clock; then grade, attribute and record. The stages' parts and the
hand-offs between them are in workers/stages/."""

from __future__ import annotations

import shutil
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import anyio

from mcp_farm.schema import Scenario, Settings, TrialResult, TrialSpec
from mcp_farm.workers.grading.grade import scenario_of
from mcp_farm.workers.mcp.capture import Capture
from mcp_farm.workers.mcp.pool import ServerPool
from mcp_farm.workers.model.adapters import ModelClient, make_client
from mcp_farm.workers.session import SessionState
from mcp_farm.workers.stages.attribute import attribute
from mcp_farm.workers.stages.connect import attached, on_connection
from mcp_farm.workers.stages.drivers import SCRIPTED, Driver, driver_for
from mcp_farm.workers.stages.ended import Ended, classified
from mcp_farm.workers.stages.grade import grade
from mcp_farm.workers.stages.record import judge_for, record

# `farm rescore` attaches a trial's servers and makes its judge as a trial does.
__all__ = ["attached", "execute_trial", "judge_for"]


async def execute_trial(
    spec: TrialSpec, settings: Settings, pool: ServerPool | None = None
) -> TrialResult:
    """Run one trial on servers from `pool` (warm ones), or on servers started just for it."""
    async with _servers(spec, settings, pool) as servers:
        return await _execute(spec, settings, servers)


@asynccontextmanager
async def _servers(
    spec: TrialSpec, settings: Settings, pool: ServerPool | None
) -> AsyncIterator[ServerPool]:
    """`pool`, or a pool of the trial's own, closed and its folder removed as the trial ends."""
    if pool is not None:
        yield pool
        return
    root = settings.data_dir / "trials" / spec.trial_id[:16]
    try:
        async with anyio.create_task_group() as tg:
            own = ServerPool(tg, root, settings.server_start_timeout_s, fork=settings.server_fork)
            try:
                yield own
            finally:
                own.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def _execute(spec: TrialSpec, settings: Settings, pool: ServerPool) -> TrialResult:
    """Run one trial's stages. Model failures become outcomes; infrastructure failures become
    infra_error; an exception from the farm's own code (a bug) becomes harness_error, with its
    traceback."""
    scenario = scenario_of(spec)  # with the sweep's overrides, as `farm rescore` grades it
    ended = await _session(spec, scenario, settings, pool)
    grading = grade(scenario, ended)
    blame = attribute(scenario, ended, grading)
    return await record(spec, settings, scenario, ended, grading, blame)


async def _session(
    spec: TrialSpec, scenario: Scenario, settings: Settings, pool: ServerPool
) -> Ended:
    """The model client, the conversation's driver, then the stages on the connection, under
    the scenario's clock; a failure ends the session, classified (`classified`)."""
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    state = SessionState()
    schemas: dict[str, dict[str, Any]] = {}
    problem = ""
    client: ModelClient | None = None
    driver: Driver = SCRIPTED
    try:
        client = make_client(spec.model, settings.model_cache_dir, settings.local_threads)
        driver = driver_for(spec, scenario, settings)
        # The scenario's clock counts tools, servers and setup; the session stops it while the
        # model replies (each reply has the model's own limit).
        with anyio.CancelScope(deadline=anyio.current_time() + scenario.time_limit_s) as clock:
            state.clock = clock
            capture = Capture(settings.capture_dir) if settings.capture_dir else None
            schemas = await on_connection(state, spec, scenario, client, pool, capture, driver)
        if clock.cancelled_caught:
            state.stop_reason = "time_limit"
    except BaseException as exc:  # classify: timeout / infra / harness; the rest is re-raised
        failure = classified(exc, spec.trial_id)
        if failure is None:
            raise
        state.stop_reason, problem = failure
    # The user model's time is the user's, and selection's is its own: never the agent's.
    selection_s = sum(t.seconds for t in state.selections) if state.selections is not None else None
    user = driver.user
    latency_s = time.perf_counter() - started - (user.seconds if user else 0.0)
    latency_s -= selection_s or 0.0
    stop = state.stop_reason or "turn_limit"
    pins = client.pins if client else {}
    return Ended(
        spec.trial_id,
        state,
        schemas,
        stop,
        problem,
        driver,
        pins,
        started_at,
        latency_s,
        selection_s,
    )
