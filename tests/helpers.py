"""Building trials for tests: scripted models and ideal scripts derived from scenarios."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from mcp_farm.scenarios import load_prompt
from mcp_farm.schema import (
    ModelTarget,
    PromptConfig,
    Scenario,
    ScenarioRef,
    Settings,
    SweepSpec,
    ToolCallRecord,
    TrialProvenance,
    TrialResult,
    TrialSpec,
)
from mcp_farm.workers.mcp.shared import free_port as free_port

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from mcp_farm.scheduler.submission.expand import Plan


def fixed_provenance() -> TrialProvenance:
    """A fixed provenance for results a test builds by hand."""
    return TrialProvenance(
        farm_version="0",
        git_commit="x",
        host="h",
        worker_tag="cpu",
        python="3.11",
        mcp_version="2",
        scenario_version=1,
        prompt_version=1,
        model_pins={},
    )


def listing_result(
    scenario: Scenario, trial_id: str, sweep_id: str, indexes: list[int], outcome: str = "pass"
) -> TrialResult:
    """A finished result of `scenario` whose tool calls (numbered `indexes`) each listed the
    home folder, for tests that store results by hand."""
    now = datetime.now(UTC)
    return TrialResult(
        trial_id=trial_id,
        sweep_id=sweep_id,
        model_id="m",
        prompt_id="native",
        scenario_id=scenario.id,
        tier=scenario.tier,
        expected_tools=scenario.expected_tools,
        repetition=0,
        outcome=outcome,  # type: ignore[arg-type]
        stop_reason="answer",
        started_at=now,
        finished_at=now,
        latency_s=1.0,
        tool_calls=[
            ToolCallRecord(
                index=i,
                server="filesystem",
                tool="list_directory",
                arguments={"path": "/"},
                ok=True,
            )
            for i in indexes
        ],
        provenance=fixed_provenance(),
    )


def ideal_script(scenario: Scenario) -> list[dict[str, Any]]:
    """What a perfect agent says: each expected call with its example arguments, then the
    answer. On a scenario with routes, it takes the first route (`ways()` gives each). In a
    conversation, every turn's ideal replies in order (a question, in a turn that must ask)."""
    if scenario.turns:
        return [
            item
            for i in range(len(scenario.turns))
            for item in ideal_script(scenario.turn_scenario(i))
        ]
    scenario = scenario.ways()[0][1]
    script: list[dict[str, Any]] = [
        {"call": {"name": step.names[0], "arguments": step.example or {}}}
        for step in scenario.expect
    ]
    script.append({"answer": scenario.example_answer or "done"})
    return script


def ideal_call_problems(scenario: Scenario, result: TrialResult) -> list[str]:
    """What went wrong at the server for the ideal agent: each of its calls is its step's call
    and must have worked (or failed, for a step with `expect_error`). A misconfigured server (a
    wrong sandbox, missing data) shows up here whatever the grade says. On a scenario with
    routes, the steps are those of the route the trial took; in a conversation, those of every
    turn's first route. In a scenario that scripts any `elicit` answer, a request no entry
    answered (a typo in `field:` or `message:`) is a problem too: it was declined unscripted,
    which the ideal agent's pass would otherwise hide."""
    unscripted = _unscripted(scenario, result)
    if scenario.turns:
        views = [scenario.turn_scenario(i).ways()[0][1] for i in range(len(scenario.turns))]
        scenario = views[0].model_copy(update={"expect": [s for v in views for s in v.expect]})
    scenario = dict(scenario.ways()).get(result.route, scenario.ways()[0][1])
    problems = [
        f"{c.tool}: " + ("worked, but the step expects an error" if c.ok else f"{c.error}")
        for step, c in zip(scenario.expect, result.tool_calls, strict=False)
        if c.ok == step.expect_error
    ]
    if len(result.tool_calls) != len(scenario.expect):
        problems.append(f"{len(result.tool_calls)} call(s) for {len(scenario.expect)} step(s)")
    return problems + unscripted


def _unscripted(scenario: Scenario, result: TrialResult) -> list[str]:
    """Elicitations declined as unscripted, in a scenario that scripts any answer."""
    if not (scenario.elicit or any(turn.elicit for turn in scenario.turns)):
        return []
    return [
        f"{e.server} asked {e.message!r} (turn {e.turn + 1}) and no `elicit` entry answered it: "
        "check its `field:` and `message:` against the request"
        for e in result.elicitations
        if not e.scripted
    ]


def scripted(script: list[dict[str, Any]], model_id: str = "scripted") -> ModelTarget:
    return ModelTarget(id=model_id, adapter="scripted", model="script", script=script)


def trial(
    scenario: Scenario,
    script: list[dict[str, Any]],
    *,
    suite: str = "basic",
    prompt: str | PromptConfig = "native",
    sweep_id: str = "test-sweep",
    repetition: int = 0,
) -> TrialSpec:
    config = load_prompt(prompt) if isinstance(prompt, str) else prompt
    return TrialSpec(
        sweep_id=sweep_id,
        model=scripted(script),
        prompt=config,
        scenario=ScenarioRef(id=scenario.id, version=scenario.version, suite=suite),
        repetition=repetition,
        seed=repetition,
    )


def wait_until_serving(
    url: str, proc: subprocess.Popen[Any], seconds: float, name: str, status: int | None = None
) -> None:
    """Poll `url` until it answers (with `status`, when given); fail if the process exits first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{name} exited with status {proc.returncode} before serving")
        try:
            response = httpx.get(url, timeout=2)
            if status is None or response.status_code == status:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    pytest.fail(f"{name} did not answer at {url} within {seconds:g} s")


def stop_server(proc: subprocess.Popen[Any]) -> None:
    """Stop a server started by hand: asked first, killed if it is still there after 10 s. A
    fixture server ends the open requests of a session still held (a test module's warm pool
    closes after the module's server fixtures) `STOP_GRACE_S` after SIGTERM."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextmanager
def served_over_http(module: str, name: str) -> Iterator[tuple[str, subprocess.Popen[Any]]]:
    """A bundled server (`python -m module`) over streamable HTTP, started by hand as a user
    would: its URL once it answers, and its process; stopped with `stop_server` after."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--transport", "http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_until_serving(url, proc, 30, name)
        yield url, proc
    finally:
        stop_server(proc)


def run_ideal_first(folder: Path, suite: Path, **settings: Any) -> TrialResult:
    """The first scenario of the suite file at `suite`, run once by its ideal agent in a
    runtime of its own (SQLite and data under `folder`; `settings` on top)."""
    from mcp_farm.scenarios import load_suite
    from mcp_farm.workers.node.runtime import Runtime

    config = Settings(
        data_dir=folder / "data",
        database_url=f"sqlite:///{folder / 'farm.sqlite'}",
        server_start_timeout_s=30.0,
        **settings,
    )
    scenario = load_suite(str(suite)).scenarios[0]
    rt = Runtime(config)
    try:
        return rt.run(trial(scenario, ideal_script(scenario), suite=str(suite)), config)
    finally:
        rt.close()


def run_sweep_embedded(
    sweep: SweepSpec, settings: Settings, source: str = "test"
) -> tuple[Engine, Plan]:
    """The sweep expanded and run embedded, as `farm run` does, quietly, on the settings'
    database (created first): its engine and its plan."""
    from rich.console import Console

    from mcp_farm.scheduler.submission.embedded import run_embedded
    from mcp_farm.scheduler.submission.expand import expand
    from mcp_farm.schema.db import init_db, make_engine

    engine = make_engine(settings.resolved_database_url())
    init_db(engine)
    plan = expand(sweep, source)
    run_embedded(plan=plan, settings=settings, engine=engine, console=Console(quiet=True))
    return engine, plan
