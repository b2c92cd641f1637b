"""Input no trial can match (a NUL or another control character, a 50,000-character search) is
refused at the edge with a one-line 400 on both databases, and with a one-line error in
`farm trials` and `farm trial show`, before any statement reaches the database."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.cli.app import main
from mcp_farm.scheduler.view.app import create_app
from mcp_farm.scheduler.view.filters import MAX_CHARS, FilterError, TrialFilter, checked_text
from mcp_farm.scheduler.view.queries import read_only
from mcp_farm.schema.db import init_db, make_engine
from tests.scheduler.view.conftest import LOCAL

SWEEP = "bad-input"
TEXT_FIELDS = ("model", "config", "scenario", "tool", "route", "scoring", "search", "after")
REFUSED = ("a\x00b", "a\x1bb", "\x7f", "x" * 50_000)


def _loaded(engine: Engine) -> Engine:
    init_db(engine)
    load(
        engine, SWEEP, trials(SWEEP, [("m", "native")], scenarios(3, seed=1), 2, lambda *_: 0.5, 2)
    )
    return engine


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    if request.param == "sqlite":
        yield _loaded(make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}"))
    else:
        yield _loaded(request.getfixturevalue("pg_engine"))


def _one_line_400(web: TestClient, path: str, params: dict[str, str] | None = None) -> str:
    response = web.get(path, params=params)
    assert response.status_code == 400, (path, params, response.status_code)
    said = response.text.split('<p class="error">', 1)[1].split("</p>", 1)[0]
    assert "\n" not in said and len(said) < 300, said
    return said


@pytest.mark.parametrize("value", REFUSED, ids=["nul", "escape", "delete", "50k"])
def test_every_text_filter_and_id_refuses_what_no_trial_holds_with_a_400(
    engine: Engine, value: str
) -> None:
    web = TestClient(create_app(read_only(engine)), base_url=LOCAL)
    for field in TEXT_FIELDS:
        said = _one_line_400(web, f"/sweeps/{SWEEP}/trials", {field: value})
        assert said.startswith(f"query: {field}=")
    sent = quote(value, safe="")
    for path in (f"/sweeps/{sent}", f"/sweeps/{sent}/trials", f"/trials/{sent}"):
        assert "path: " in _one_line_400(web, path)
    _one_line_400(web, "/compare", {"a": value, "b": "x"})
    # What is refused is only what no id or detail can hold: the same page, plainly, is fine.
    assert web.get(f"/sweeps/{SWEEP}/trials", params={"search": "wrong tool é"}).status_code == 200


def test_a_search_as_long_as_the_bound_still_runs(engine: Engine) -> None:
    web = TestClient(create_app(read_only(engine)), base_url=LOCAL)
    page = web.get(f"/sweeps/{SWEEP}/trials", params={"search": "%_" * (MAX_CHARS // 2)})
    assert page.status_code == 200 and "No trial matches." in page.text


def test_the_refusal_names_the_field_and_quotes_a_long_value_cut_short() -> None:
    with pytest.raises(FilterError) as caught:
        TrialFilter.read({"search": "y" * 50_000}, source="farm trials")
    said = str(caught.value)
    assert said.startswith("farm trials: search='yyyy") and "(50,000 characters)" in said
    assert said.endswith(f"longer than {MAX_CHARS} characters") and len(said) < 200
    with pytest.raises(FilterError, match=r"U\+0000"):
        checked_text("run\x00", name="trial")


@pytest.mark.parametrize(
    "argv",
    [
        ["trials", SWEEP, "--search", "z" * 50_000],
        ["trials", SWEEP, "--model", "m\x00"],
        ["trials", "bad\x00sweep"],
        ["trial", "show", "t\x00"],
    ],
    ids=["long-search", "nul-model", "nul-sweep", "nul-trial"],
)
def test_the_command_line_says_why_in_one_line_without_a_traceback(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    url = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    _loaded(make_engine(url))
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(sys, "argv", ["farm", *argv, "--db", url])
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
    assert len(err) < 300
