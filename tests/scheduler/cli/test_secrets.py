"""No API key or password reaches what the farm stores, logs, publishes or puts on a command line."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import pytest
import redis
import yaml
from sqlalchemy import select
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel
from typer.testing import CliRunner

from mcp_farm.scenarios import load_prompt
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.cli.nodes import flower_command
from mcp_farm.scheduler.submission.publish import publish_trials
from mcp_farm.schema import (
    FarmError,
    ModelTarget,
    ScenarioRef,
    Settings,
    SpecError,
    SweepSpec,
    TrialSpec,
    validate,
)
from mcp_farm.schema.tasks.broker import (
    make_celery,
    queue_for,
)
from tests.fake_openai import (
    Behaviour,
    fake_openai,
)
from tests.helpers import free_port

API_KEY = "sk-test-4f1b7c9e2d"
DB_PASSWORD = "pg-pw-8c3e1a"
BROKER_PASSWORD = "redis-pw-5d2f9b"
FLOWER_PASSWORD = "flower-pw-1a7e4c"
SECRETS = (API_KEY, DB_PASSWORD, BROKER_PASSWORD, FLOWER_PASSWORD)


def everything_stored(engine: Engine) -> str:
    """Every row of every farm table, as text."""
    dumped = []
    with engine.connect() as conn:
        for table in SQLModel.metadata.sorted_tables:
            dumped += [repr(tuple(row)) for row in conn.execute(select(table)).all()]
    return "\n".join(dumped)


def test_a_keyed_sweep_on_a_password_database_stores_and_logs_neither_secret(
    tmp_path: Path,
    pg_engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("FARM_TEST_API_KEY", API_KEY)
    # The test server trusts loopback, so the password is carried but never checked: what
    # matters is where the URL that holds it ends up.
    db = pg_engine.url.set(password=DB_PASSWORD).render_as_string(hide_password=False)
    with fake_openai(Behaviour(models=["tiny"], key=API_KEY)) as endpoint:
        model = {
            "id": "keyed",
            "adapter": "openai",
            "model": "tiny",
            "endpoint": endpoint.url,
            "api_key_env": "FARM_TEST_API_KEY",
        }
        sweep = {
            "name": "secrets",
            "models": [model],
            "prompts": ["json"],
            "scenarios": {"ids": ["fs.budget-total"]},
            "repetitions": 2,
        }
        path = tmp_path / "sweep.yaml"
        path.write_text(yaml.safe_dump(sweep))
        done = CliRunner().invoke(
            app, ["run", str(path), "--db", db, "--data-dir", str(tmp_path / "data")]
        )
        report = CliRunner().invoke(app, ["report", "--db", db, "--format", "json"])
    assert done.exit_code == 0, done.output
    # The key was used: the endpoint saw it on the model list and on every completion.
    assert endpoint.behaviour.seen_auth == [f"Bearer {API_KEY}"] * 3
    stored = everything_stored(pg_engine)
    assert "FARM_TEST_API_KEY" in stored and "keyed" in stored  # the rows are there
    for secret in (API_KEY, DB_PASSWORD):
        assert secret not in stored
        assert secret not in done.output and secret not in report.output
        assert secret not in caplog.text
    assert "***@" in done.output  # the database URL was shown, masked


def test_trial_messages_on_the_broker_carry_no_key(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What Flower shows of a task is its message: argsrepr, args and kwargs.
    monkeypatch.setenv("FARM_TEST_API_KEY", API_KEY)
    model = ModelTarget(
        id="keyed",
        adapter="openai",
        model="tiny",
        endpoint="http://127.0.0.1:9/v1",
        api_key_env="FARM_TEST_API_KEY",
    )
    trial = TrialSpec(
        sweep_id="secrets",
        model=model,
        prompt=load_prompt("json"),
        scenario=ScenarioRef(id="fs.budget-total", version=1, suite="basic"),
        repetition=0,
        seed=0,
    )
    queue = queue_for("cpu")
    assert publish_trials(make_celery(Settings(broker_url=redis_url)), [(trial, queue)]) == 1
    client = redis.Redis.from_url(redis_url)
    (raw,) = client.lrange(queue, 0, -1)
    client.close()
    envelope = json.loads(raw)
    assert envelope["headers"]["argsrepr"] == "keyed · json · fs.budget-total #0"
    shown = raw.decode() + base64.b64decode(envelope["body"]).decode()
    assert "FARM_TEST_API_KEY" in shown and API_KEY not in shown


def test_a_broker_that_refuses_is_named_without_its_password() -> None:
    broker = f"redis://:{BROKER_PASSWORD}@127.0.0.1:{free_port()}/0"
    trial = TrialSpec(
        sweep_id="secrets",
        model=ModelTarget(id="s", adapter="scripted", model="x", script=[]),
        prompt=load_prompt("json"),
        scenario=ScenarioRef(id="fs.budget-total", version=1, suite="basic"),
        repetition=0,
        seed=0,
    )
    with pytest.raises(FarmError) as caught:
        publish_trials(make_celery(Settings(broker_url=broker)), [(trial, queue_for("cpu"))])
    assert BROKER_PASSWORD not in str(caught.value)
    assert "redis://:***@127.0.0.1" in str(caught.value)


def test_flower_gets_its_password_and_broker_through_the_environment() -> None:
    broker = f"redis://:{BROKER_PASSWORD}@head:6379/0"
    settings = Settings(broker_url=broker, flower_password=FLOWER_PASSWORD)
    argv, env = flower_command(
        settings,
        port=5555,
        address="0.0.0.0",
        env={"PATH": "/usr/bin", "FARM_FLOWER_PASSWORD": FLOWER_PASSWORD, "BROKER_URL": "x"},
    )
    shown = " ".join(argv)
    assert FLOWER_PASSWORD not in shown and BROKER_PASSWORD not in shown
    assert argv[-4:] == [
        "flower",
        "--port=5555",
        "--address=0.0.0.0",
        "--purge_offline_workers=600",
    ]
    assert env["FLOWER_BASIC_AUTH"] == f"farm:{FLOWER_PASSWORD}"
    assert env["CELERY_BROKER_URL"] == broker and env["PATH"] == "/usr/bin"
    assert "FARM_FLOWER_PASSWORD" not in env and "BROKER_URL" not in env


@pytest.mark.parametrize(("user", "password"), [("farm", "a,b"), ("far,m", "pw"), ("a:b", "pw")])
def test_flower_refuses_credentials_it_would_split(user: str, password: str) -> None:
    settings = Settings(flower_user=user, flower_password=password)
    with pytest.raises(FarmError, match="FARM_FLOWER_USER"):
        flower_command(settings, port=5555, address="127.0.0.1", env={})


def test_flower_needs_a_password() -> None:
    with pytest.raises(FarmError, match="set FARM_FLOWER_PASSWORD"):
        flower_command(Settings(flower_password=None), port=5555, address="127.0.0.1", env={})


def test_settings_do_not_show_urls_or_passwords_in_their_repr() -> None:
    settings = Settings(
        database_url=f"postgresql://farm:{DB_PASSWORD}@db/farm",
        broker_url=f"redis://:{BROKER_PASSWORD}@head:6379/0",
        flower_password=FLOWER_PASSWORD,
    )
    assert not any(secret in repr(settings) for secret in SECRETS)


def sweep_with(model: dict[str, object]) -> dict[str, object]:
    return {"name": "s", "prompts": ["native"], "models": [model]}


@pytest.mark.parametrize(
    ("extra", "advice"),
    [
        ({"api_key": API_KEY}, "api_key_env: OPENAI_API_KEY"),
        ({"token": API_KEY}, "api_key_env: OPENAI_API_KEY"),
        ({"api_key_env": API_KEY}, "not the key itself"),
        ({"endpoint": f"http://user:{API_KEY}@h/v1"}, "bare base URL"),
        ({"endpoint": f"http://h/v1?api_key={API_KEY}"}, "bare base URL"),
    ],
)
def test_a_key_written_into_a_sweep_file_is_refused_without_being_repeated(
    extra: dict[str, str], advice: str
) -> None:
    model = {"id": "m", "adapter": "openai", "model": "x", "endpoint": "http://h/v1"} | extra
    with pytest.raises(SpecError) as caught:
        validate(SweepSpec, sweep_with(model), "sweep.yaml")
    assert "models[0]" in str(caught.value) and advice in str(caught.value)
    assert API_KEY not in str(caught.value)
