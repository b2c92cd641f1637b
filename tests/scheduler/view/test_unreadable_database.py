"""The explorer over a database it cannot read (no file, no tables, an older schema): one line
and exit 2 in the terminal, a readable page in the browser; nothing created or migrated."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from mcp_farm.scheduler.view.app import create_app
from mcp_farm.scheduler.view.queries import read_only
from mcp_farm.schema.db import SCHEMA_VERSION, init_db, make_engine
from tests.scheduler.view.conftest import LOCAL, farm

COMMANDS = [("trials",), ("trial", "show", "abc"), ("view", "--port", "0")]
PAGES = ["/", "/sweeps/s", "/sweeps/s/trials", "/trials/abc", "/compare?a=x&b=y"]


def older(path: Path) -> Path:
    """A database one schema version behind this farm's (as before `farm db init`)."""
    init_db(make_engine(f"sqlite:///{path}"))
    with sqlite3.connect(path) as db:
        db.execute("delete from schema_version where version = ?", (SCHEMA_VERSION,))
    return path


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_on_a_data_folder_without_a_database_says_so_and_creates_nothing(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    data = tmp_path / "data"
    done = farm(*command, data=data, timeout=60)
    said = done.stderr
    assert done.returncode == 2, done.stdout
    # Piped, the message is one line, not wrapped mid-sentence at 80 columns.
    assert said.strip().count("\n") == 0 and len(said) > 80, said
    assert said.count("error:") == 1 and "Traceback" not in said
    assert "no sweep recorded" in said and "farm db init" in said
    assert not data.exists(), "the explorer created what it was asked to read"


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_on_a_database_at_an_older_schema_names_farm_db_init(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    data = tmp_path / "data"
    older(data / "farm.sqlite")
    done = farm(*command, data=data, timeout=60)
    said = done.stderr
    assert done.returncode == 2 and said.count("error:") == 1 and "Traceback" not in said
    assert said.strip().count("\n") == 0, said
    assert f"schema version {SCHEMA_VERSION - 1}" in said and "farm db init" in said
    # An embedded farm's file, on this machine: what to run here, not on a "head node".
    assert "head node" not in said and "--data-dir" in said
    with sqlite3.connect(data / "farm.sqlite") as db:
        found = db.execute("select max(version) from schema_version").fetchone()[0]
    assert found == SCHEMA_VERSION - 1, "the explorer migrated the database"


@pytest.mark.parametrize("path", PAGES)
def test_every_page_over_a_database_without_tables_answers_what_to_do(
    tmp_path: Path, path: str
) -> None:
    engine = read_only(make_engine(f"sqlite:///{tmp_path / 'empty.sqlite'}"))
    page = TestClient(create_app(engine), base_url=LOCAL, raise_server_exceptions=False).get(path)
    assert page.status_code == 503
    assert "no sweep recorded" in page.text and "farm db init" in page.text
    assert "Traceback" not in page.text


def test_a_page_over_a_database_at_an_older_schema_names_farm_db_init(tmp_path: Path) -> None:
    path = older(tmp_path / "farm.sqlite")
    with sqlite3.connect(path) as db:
        db.execute("drop index ix_trial_browse_route")  # an older code had neither
        db.execute("alter table trial drop column route")  # a column an older code lacked
        db.execute("insert into sweep values ('s', 's', '{}', 0, '2026-11-01 10:00:00', 'active')")
    engine = read_only(make_engine(f"sqlite:///{path}"))
    web = TestClient(create_app(engine), base_url=LOCAL, raise_server_exceptions=False)
    page = web.get("/sweeps/s/trials")
    assert page.status_code == 503
    assert f"schema version {SCHEMA_VERSION - 1}" in page.text and "farm db init" in page.text
    assert web.get("/").status_code == 200, "a page that needs no missing column still opens"
