"""Server definitions that take values from the worker (`{env:VAR}`, `{sandbox}` in `env:`)
and a sandbox folder given as a path: filled in at start, never stored."""

from __future__ import annotations

import hashlib
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError
from sqlalchemy import MetaData, select

from mcp_farm.scenarios import (
    ScenarioError,
    load_suite,
)
from mcp_farm.schema import (
    ServerDef,
    Settings,
    TrialResult,
)
from mcp_farm.schema.db import (
    init_db,
    make_engine,
)
from mcp_farm.workers.mcp.pool import (
    _key,
    launch,
)
from mcp_farm.workers.store.results import save_trial
from mcp_farm.workers.trial import execute_trial
from tests.helpers import trial

ENVINFO = Path(__file__).resolve().parents[2] / "servers" / "envinfo.py"
SECRET = "s3cret-token-9f2c"


def _suite(folder: Path, sandbox: str, command: str = f'["{{python}}", "{ENVINFO}"]') -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "envinfo.yaml"
    path.write_text(f"""
suite: envinfo
servers:
  - name: envinfo
    command: {command}
    env: {{TOKEN: "Bearer {{env:FARM_TEST_TOKEN}}", DATA_DIR: "{{sandbox}}"}}
    sandbox: "{sandbox}"
scenarios:
  - id: envinfo.check
    version: 1
    tier: simple
    prompt: What is set?
    servers: [envinfo]
    open_tools: true
""")
    return str(path)


def _run(suite: str, settings: Settings) -> TrialResult:
    script = [
        {"call": {"name": "variable_digest", "arguments": {"name": "TOKEN"}}},
        {"call": {"name": "data_files", "arguments": {}}},
        {"answer": "done"},
    ]
    spec = trial(load_suite(suite).scenarios[0], script, suite=suite)
    return anyio.run(execute_trial, spec, settings)


def _data(tmp_path: Path) -> Path:
    data = tmp_path / "seed-data"
    data.mkdir()
    (data / "seed.txt").write_text("seeded")
    return data


@pytest.mark.integration
@pytest.mark.parametrize("form", ["relative", "absolute"])
def test_env_placeholders_and_a_sandbox_path_reach_the_server_and_no_row_holds_the_value(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    monkeypatch.setenv("FARM_TEST_TOKEN", SECRET)
    data = _data(tmp_path)
    # Relative to the suite file's folder, not to the working folder the test runs in.
    suite = _suite(tmp_path / "suites", "../seed-data" if form == "relative" else str(data))
    result = _run(suite, settings)
    assert result.outcome == "pass", result.detail
    digest, files = (c.result_text for c in result.tool_calls)
    assert digest == hashlib.sha256(f"Bearer {SECRET}".encode()).hexdigest()
    assert files == "seed.txt"  # a copy of the folder, made for the trial

    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    spec = trial(load_suite(suite).scenarios[0], [], suite=suite)
    save_trial(
        engine=engine, spec=spec, result=result.model_copy(update={"trial_id": spec.trial_id})
    )
    tables = MetaData()
    tables.reflect(engine)
    with engine.connect() as conn:
        stored = [str(row) for table in tables.sorted_tables for row in conn.execute(select(table))]
    assert stored and not any(SECRET in row for row in stored)


def test_the_pool_key_holds_the_placeholder_never_the_value(tmp_path: Path) -> None:
    server = ServerDef(
        name="api",
        command=["{python}", "-m", "api", "--token", "{env:API_TOKEN}"],
        env={"KEY": "{env:API_TOKEN}"},
    )
    how = launch(server, None, ["api"], {"API_TOKEN": SECRET})
    assert how.argv[-1] == SECRET and how.env == {"KEY": SECRET}
    assert SECRET not in _key(server, ["api"]) and "{env:API_TOKEN}" in _key(server, ["api"])


@pytest.mark.integration
def test_a_variable_missing_on_the_worker_is_an_infra_error_naming_server_and_variable(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FARM_TEST_TOKEN", raising=False)
    result = _run(_suite(tmp_path, str(_data(tmp_path))), settings)
    assert result.outcome == "infra_error"
    assert "MCP server 'envinfo' needs the environment variable FARM_TEST_TOKEN" in result.detail


@pytest.mark.integration
def test_a_server_that_fails_to_start_is_reported_without_values_from_the_environment(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FARM_TEST_TOKEN", SECRET)
    missing = str(tmp_path / SECRET / "server")
    monkeypatch.setenv("FARM_TEST_BIN", missing)
    suite = _suite(tmp_path, str(_data(tmp_path)), command='["{env:FARM_TEST_BIN}"]')
    result = _run(suite, settings)
    assert result.outcome == "infra_error"
    assert "MCP server 'envinfo' failed to start" in result.detail
    assert SECRET not in result.detail and "***" in result.detail


@pytest.mark.integration
def test_a_sandbox_folder_that_holds_the_farm_data_folder_is_copied_without_it(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FARM_TEST_TOKEN", SECRET)
    (tmp_path / "seed.txt").write_text("seeded")
    assert settings.data_dir.is_relative_to(tmp_path)  # the trial's copy lands inside it
    result = _run(_suite(tmp_path / "suites", "../"), settings)
    assert result.outcome == "pass", result.detail
    assert result.tool_calls[1].result_text.splitlines() == ["seed.txt", "suites"]


@pytest.mark.parametrize("sandbox", ["./missing", "no-such-fixture"])
def test_a_sandbox_folder_that_does_not_exist_is_refused_when_the_suite_loads(
    tmp_path: Path, sandbox: str
) -> None:
    with pytest.raises(ScenarioError, match="no folder") as raised:
        load_suite(_suite(tmp_path, sandbox))
    assert raised.value.field == "servers[0].sandbox"


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"env": {"A": "{env:not a name}"}}, "does not name an environment variable"),
        ({"env": {"A": "{sandbox}"}}, "no `sandbox:` folder"),
        ({"command": ["srv", "--root", "{sandbox}"]}, "no `sandbox:` folder"),
    ],
)
def test_placeholders_that_cannot_be_filled_are_refused_in_the_definition(
    fields: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem):
        ServerDef.model_validate({"name": "srv", "command": ["srv"], **fields})
