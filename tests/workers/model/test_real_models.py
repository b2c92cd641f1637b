"""The real model paths: the bundled model in-process, and llama.cpp's OpenAI-compatible server.

Slow (tens of seconds each); CI runs them. They check that trials complete and are recorded
faithfully, not how well a 270M-parameter model scores.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from mcp_farm.scenarios import (
    load_prompt,
    load_suite,
)
from mcp_farm.schema import (
    OUTCOMES,
    ModelTarget,
    ScenarioRef,
    Settings,
    TrialSpec,
)
from mcp_farm.workers.model.local import bundled_path
from mcp_farm.workers.trial import execute_trial
from tests.helpers import (
    free_port,
    wait_until_serving,
)

pytestmark = [pytest.mark.slow, pytest.mark.integration]
SCENARIO = next(s for s in load_suite("basic").scenarios if s.id == "fs.list-desktop")


def _needs_llama() -> None:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("llama-cpp-python is not installed; scripts/test.sh installs it")
        pytest.skip("llama-cpp-python not installed (run scripts/setup.sh)")


def _spec(model: ModelTarget, prompt: str) -> TrialSpec:
    return TrialSpec(
        sweep_id="real",
        model=model,
        prompt=load_prompt(prompt),
        scenario=ScenarioRef(id=SCENARIO.id, version=1, suite="basic"),
        repetition=0,
        seed=1,
    )


@pytest.mark.parametrize("prompt", ["native", "json"])
def test_the_bundled_local_model_runs_a_recorded_trial(prompt: str, settings: Settings) -> None:
    _needs_llama()
    model = ModelTarget(id="gemma3-270m", adapter="local", model="gemma3-270m")
    result = anyio.run(execute_trial, _spec(model, prompt), settings)
    assert result.outcome in OUTCOMES and result.outcome != "infra_error", result.detail
    assert result.tokens.prompt > 0 and result.tokens.completion > 0
    assert result.turns >= 1
    assert any(m.role == "assistant" for m in result.transcript)
    assert result.provenance.model_pins["chat_format"] == "gemma"
    assert result.provenance.model_pins["llama_cpp_python"] == "0.3.16"


def test_a_bundled_model_reply_past_its_cpu_limit_stops_at_a_token_and_the_model_serves_on(
    settings: Settings,
) -> None:
    _needs_llama()
    tight = ModelTarget(id="g", adapter="local", model="gemma3-270m", request_timeout_s=0.05)
    stopped = anyio.run(execute_trial, _spec(tight, "native"), settings)
    assert stopped.stop_reason == "model_time_limit", stopped.detail
    assert stopped.detail == "the model's reply used more than 0.05 s of CPU time (turn 1)"
    assert stopped.provenance.reply_clock == "cpu"
    # The stop left llama.cpp's context consistent: the next reply on it is a whole one.
    model = ModelTarget(id="gemma3-270m", adapter="local", model="gemma3-270m")
    result = anyio.run(execute_trial, _spec(model, "native"), settings)
    assert result.outcome in OUTCOMES and result.outcome not in ("infra_error", "harness_error")
    assert result.stop_reason != "model_time_limit" and result.tokens.completion > 0


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> str:
    _needs_llama()
    settings = Settings()
    model = bundled_path("gemma3-270m", settings.model_cache_dir)
    port = free_port()
    log = (tmp_path_factory.mktemp("server") / "llama-server.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--chat_format",
            "gemma",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "4096",
            "--model_alias",
            "gemma3-270m",
            # As many threads as the bundled model in-process decodes with (2, or the test
            # lane's FARM_LOCAL_THREADS=1; the server's own default is half the cores). Two
            # threads beside busy lanes spin for each other until requests time out.
            "--n_threads",
            str(settings.local_threads),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_serving(f"{base}/models", proc, 120, f"llama_cpp.server (log: {log.name})", 200)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.mark.parametrize("prompt", ["native", "json"])
def test_an_openai_compatible_endpoint_runs_a_recorded_trial(
    prompt: str, settings: Settings, llama_server: str
) -> None:
    model = ModelTarget(
        id="gemma-http", adapter="openai", model="gemma3-270m", endpoint=llama_server
    )
    result = anyio.run(execute_trial, _spec(model, prompt), settings)
    assert result.outcome in OUTCOMES and result.outcome != "infra_error", result.detail
    assert result.tokens.prompt > 0 and result.tokens.completion > 0
    assert result.provenance.model_pins["endpoint"] == llama_server


def test_an_endpoint_that_is_down_is_an_infra_error(settings: Settings) -> None:
    model = ModelTarget(
        id="down", adapter="openai", model="x", endpoint=f"http://127.0.0.1:{free_port()}/v1"
    )
    result = anyio.run(execute_trial, _spec(model, "native"), settings)
    assert result.outcome == "infra_error"
    assert "unreachable" in result.detail


def test_the_bundled_model_files_exist(tmp_path: Path) -> None:
    _needs_llama()
    path = bundled_path("gemma3-270m", tmp_path)
    assert path.exists() and path.stat().st_size > 100_000_000


REUSED = ("fs.list-desktop", "fs.read-todo")
"""Two trials of the `native` config: the second shares the first one's opening (system text
with the tools, about 2,100 tokens), and every turn but the first the turn before. Reuse sits
below the sampler, so one prompt configuration checks it (bench/prefix_reuse.py measures all
three, with the outcomes of each way)."""


def _answers(prompt: str, settings: Settings, reuse: bool) -> list[tuple[str, list[str]]]:
    """Outcome and the model's words for two basic scenarios, read with or without reusing
    the evaluated prompt (every trial but the first shares its opening with the one before,
    and every turn but the first with the turn before)."""
    from mcp_farm.workers.model.local import LocalClient

    model = ModelTarget(id="gemma3-270m", adapter="local", model="gemma3-270m")
    found = []
    LocalClient.reuse_prefix = reuse
    try:
        for scenario in REUSED:
            spec = _spec(model, prompt).model_copy(
                update={"scenario": ScenarioRef(id=scenario, version=1, suite="basic")}
            )
            spec = TrialSpec.model_validate(spec.model_dump() | {"trial_id": ""})
            result = anyio.run(execute_trial, spec, settings)
            words = [m.content for m in result.transcript if m.role == "assistant"]
            words += [f"{c.tool} {c.arguments}" for c in result.tool_calls]
            found.append((result.outcome, words))
    finally:
        LocalClient.reuse_prefix = True
    return found


def test_reusing_the_prompt_already_read_changes_nothing_measured(settings: Settings) -> None:
    """The same words and outcomes with and without reuse: only whole batches evaluated from
    the first token are reused, so every logit is the one a fresh read computes."""
    _needs_llama()
    native = _answers("native", settings, reuse=True)
    assert native == _answers("native", settings, reuse=False)


def three_anchors(tmp_path: Path) -> Path:
    """The bundled anchor folder cut to its first three anchors (a gate needs three), locked
    anew: the gate's path is the same as with all four, with a quarter less judging. Each
    anchor keeps its place, and so the seed its verdicts are sampled with (10 × its index)."""
    import shutil

    import yaml
    from typer.testing import CliRunner

    from mcp_farm.scenarios.anchors import ANCHORS_DIR
    from mcp_farm.scheduler.cli.app import app

    kept = ("anchor-1", "anchor-2", "anchor-3")
    folder = tmp_path / "anchors"
    folder.mkdir()
    for name in kept:
        shutil.copy(ANCHORS_DIR / "code" / f"{name}.json", folder)
    gold = yaml.safe_load((ANCHORS_DIR / "code" / "gold.yaml").read_text())
    gold["anchors"] = {name: gold["anchors"][name] for name in kept}
    (folder / "gold.yaml").write_text(yaml.safe_dump(gold))
    done = CliRunner().invoke(app, ["anchors", "lock", str(folder)])
    assert done.exit_code == 0, done.output
    return folder


def test_the_anchor_gate_judges_through_an_openai_compatible_endpoint(
    llama_server: str, tmp_path: Path
) -> None:
    """The recipe a lab follows (docs/answer-quality.md): `farm anchors verify --endpoint`. The
    bundled 270M judge is not expected to pass; the gate must run through the server, judge
    every anchor, and record its verdict for that judge."""
    import sqlite3

    from typer.testing import CliRunner

    from mcp_farm.scheduler.cli.app import app
    from mcp_farm.scheduler.cli.common import GATE_FAILED

    data = tmp_path / "data"
    args = ["anchors", "verify", str(three_anchors(tmp_path)), "--endpoint", llama_server]
    args += ["--endpoint-model", "gemma3-270m", "--data-dir", str(data)]
    done = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    out = " ".join(done.output.split())
    assert done.exit_code in (0, GATE_FAILED), out
    assert "judge openai-gemma3-270m: ρ =" in out, out
    unreadable = int(out.split(" unreadable)")[0].rsplit("(", 1)[1])
    assert unreadable == 0, out  # every verdict came back held to the schema
    with sqlite3.connect(data / "farm.sqlite") as db:
        rows = db.execute("select judge_model, passed, rho from anchor_check").fetchall()
    assert rows == [("openai-gemma3-270m", done.exit_code == 0, rows[0][2])]
    assert rows[0][2] is not None
