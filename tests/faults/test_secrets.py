"""Known secrets never reach storage, logs or the terminal, whoever repeats them: an endpoint
that echoes its Authorization header, a model that says the key, a server that prints the
token it was given, an error that quotes the database password."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import anyio
import pytest
import yaml
from typer.testing import CliRunner

from mcp_farm.scenarios import load_suite
from mcp_farm.scheduler.cli.app import app
from mcp_farm.schema import (
    Settings,
    StoreError,
    mask_secrets,
    remember_secret,
)
from mcp_farm.schema.db import make_engine
from mcp_farm.workers.store.results import storable
from mcp_farm.workers.trial import execute_trial
from tests.fake_openai import Behaviour, fake_openai
from tests.helpers import trial

pytestmark = pytest.mark.faults

API_KEY = "sk-echo-7d3a91c2"
TOKEN = "tok-leak-5e8b20"
DB_PASSWORD = "pg-secret-31c9"  # at least REMEMBER_MIN_CHARS long, as every secret here
BROKER_PASSWORD = "rd-secret-84f2"
ENVINFO = Path(__file__).resolve().parents[1] / "servers" / "envinfo.py"


def stored_text(data: Path) -> str:
    with sqlite3.connect(data / "farm.sqlite") as db:
        tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
        rows = [repr(row) for t in tables for row in db.execute(f"select * from {t}")]
    return "\n".join(rows)


def run_keyed(
    tmp_path: Path, behaviour: Behaviour, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, str]:
    """`farm run` of one keyed trial against `behaviour`; (everything stored, terminal output)."""
    monkeypatch.setenv("FARM_TEST_API_KEY", API_KEY)
    data = tmp_path / "data"
    with fake_openai(behaviour) as endpoint:
        sweep = {
            "name": "echo",
            "models": [
                {
                    "id": "keyed",
                    "adapter": "openai",
                    "model": "tiny",
                    "endpoint": endpoint.url,
                    "api_key_env": "FARM_TEST_API_KEY",
                }
            ],
            "prompts": ["json"],
            "scenarios": {"ids": ["fs.budget-total"]},
        }
        path = tmp_path / "sweep.yaml"
        path.write_text(yaml.safe_dump(sweep))
        done = CliRunner().invoke(app, ["run", str(path), "--data-dir", str(data)])
        report = CliRunner().invoke(app, ["report", "--data-dir", str(data), "--format", "json"])
    assert behaviour.seen_auth and all(a == f"Bearer {API_KEY}" for a in behaviour.seen_auth)
    return stored_text(data), done.output + report.output


def test_an_endpoint_that_echoes_the_key_leaves_it_in_no_detail_log_or_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    stored, shown = run_keyed(
        tmp_path, Behaviour(models=["tiny"], key=API_KEY, echo_auth=True), monkeypatch
    )
    assert "infra_error" in stored and "upstream refused; headers: Bearer ***" in stored
    assert API_KEY not in stored and API_KEY not in shown and API_KEY not in caplog.text


def test_a_model_that_says_the_key_has_it_masked_in_the_transcript_and_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = f'{{"answer": "the key is {API_KEY}"}}'
    stored, shown = run_keyed(
        tmp_path, Behaviour(models=["tiny"], key=API_KEY, answer=answer), monkeypatch
    )
    assert "the key is ***" in stored
    assert API_KEY not in stored and API_KEY not in shown


def test_a_server_that_prints_its_token_has_it_masked_in_the_stored_result(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.workers.mcp.test_server_env import _suite

    monkeypatch.setenv("FARM_TEST_TOKEN", TOKEN)
    data = tmp_path / "seed"
    data.mkdir()
    suite = _suite(tmp_path / "suites", str(data))
    script = [
        {"call": {"name": "variable_value", "arguments": {"name": "TOKEN"}}},
        {"answer": "done"},
    ]
    spec = trial(load_suite(suite).scenarios[0], script, suite=suite)
    result = anyio.run(execute_trial, spec, settings)
    # The model saw what the server said; what is stored has the token masked.
    assert result.tool_calls[0].result_text == f"TOKEN=Bearer {TOKEN}"
    kept = str(storable(result.model_dump(mode="json")))
    assert "TOKEN=Bearer ***" in kept and TOKEN not in kept


def test_an_error_that_quotes_the_database_password_is_masked_when_logged_or_stored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    make_engine(f"postgresql+psycopg://farm:{DB_PASSWORD}@127.0.0.1:1/farm")  # not connected
    error = StoreError(f"could not connect as farm with password {DB_PASSWORD}")
    with caplog.at_level(logging.WARNING):
        logging.getLogger("mcp_farm.test").warning("save failed: %s", error)
        try:
            raise error
        except StoreError:
            logging.getLogger("mcp_farm.test").exception("save failed")
    assert DB_PASSWORD not in caplog.text and "password ***" in caplog.text
    assert storable({"detail": str(error)}) == {
        "detail": "could not connect as farm with password ***"
    }


def test_short_values_are_not_secrets_and_urls_are_masked_when_shown() -> None:
    remember_secret("farm")  # a short password is also a word: masking it would garble text
    assert mask_secrets("mcp-farm run") == "mcp-farm run"
    shown = mask_secrets("redis://:hunter22@head:6379/0 and ?api_key=abc")
    assert "hunter22" not in shown and "abc" not in shown


def test_the_broker_password_is_masked_when_logged_stored_or_shown(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    from mcp_farm.scheduler.cli import app as cli
    from mcp_farm.schema.tasks.broker import make_celery

    make_celery(Settings(broker_url=f"redis://:{BROKER_PASSWORD}@127.0.0.1:1/0"))  # not connected
    said = f"NOAUTH: password {BROKER_PASSWORD} refused"
    with caplog.at_level(logging.WARNING):
        logging.getLogger("mcp_farm.test").warning("publish failed: %s", said)
    assert BROKER_PASSWORD not in caplog.text and "password *** refused" in caplog.text
    assert storable({"detail": said}) == {"detail": "NOAUTH: password *** refused"}

    def refused() -> None:  # the command's own error, as `farm sweep submit` would raise it
        raise StoreError(said)

    monkeypatch.setattr(cli, "app", refused)
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 2
    shown = capsys.readouterr().err
    assert BROKER_PASSWORD not in shown and "password *** refused" in shown
