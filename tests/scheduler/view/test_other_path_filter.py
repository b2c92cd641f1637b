"""The explorer's `other_path` filter: trials whose state passed while their calls did not, on the
web page, in `farm trials`, and linked from the sweep page's count of them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient
from typer.testing import CliRunner

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.cli.app import app
from mcp_farm.scheduler.view.app import create_app
from mcp_farm.scheduler.view.cards import Cards
from mcp_farm.schema.db import init_db, make_engine
from tests.scheduler.view.conftest import LOCAL

SWEEP = "probed"


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    """Two scenarios of four repetitions: s0000 has probes (repetitions 0 and 1 reached the
    state by another path, 2 and 3 did not), s0001 has none."""
    engine = make_engine(f"sqlite:///{tmp_path / 'farm.sqlite'}")
    init_db(engine)
    picked = scenarios(2, seed=3)
    load(engine, SWEEP, trials(SWEEP, [("m", "native")], picked, 4, lambda *_: 1.0, seed=1))
    first = picked[0].id
    with engine.begin() as conn:
        conn.execute(text("update trial set status = 'done', outcome = 'pass'"))
        conn.execute(
            text(
                "update trial set state_passed = true, other_path = (repetition < 2), "
                "outcome = case when repetition < 2 then 'wrong_params' else 'pass' end "
                "where scenario_id = :s"
            ),
            {"s": first},
        )
    return engine


def _ids(page: str) -> list[str]:
    return re.findall(r'href="/trials/([^"/?]+)"', page)


def _web(engine: Engine) -> TestClient:
    # The first request waits, bounded, for the sweep's first card.
    return TestClient(create_app(engine, cards=Cards(engine, first_wait_s=60)), base_url=LOCAL)


@pytest.mark.parametrize(("value", "expected"), [("yes", 2), ("no", 2), (None, 8)])
def test_the_other_path_filter_selects_only_trials_with_probes(
    engine: Engine, value: str | None, expected: int
) -> None:
    query = {} if value is None else {"other_path": value}
    page = _web(engine).get(f"/sweeps/{SWEEP}/trials", params=query)
    assert page.status_code == 200
    assert len(_ids(page.text)) == expected
    assert 'name="other_path"' in page.text, "the filter form has no other_path field"


def test_a_bad_other_path_value_is_refused_naming_it(engine: Engine) -> None:
    page = _web(engine).get(f"/sweeps/{SWEEP}/trials?other_path=maybe")
    assert page.status_code == 400
    assert "other_path=&#x27;maybe&#x27;" in page.text


def test_the_sweep_page_links_its_other_path_count_to_those_trials(engine: Engine) -> None:
    web = _web(engine)
    page = web.get(f"/sweeps/{SWEEP}").text
    found = re.search(r'href="([^"]*other_path=yes[^"]*)">other path 2<', page)
    assert found, "the config row's other path count is not a link"
    listed = web.get(found.group(1).replace("&amp;", "&")).text
    assert len(_ids(listed)) == 2


def test_farm_trials_filters_by_other_path(engine: Engine) -> None:
    url = str(engine.url.render_as_string(hide_password=False))
    result = CliRunner().invoke(
        app, ["trials", SWEEP, "--other-path", "yes", "--db", url], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith(SWEEP) or "\t" in line]
    assert len([line for line in lines if "wrong_params" in line]) == 2, result.output
    assert "\tpass\t" not in result.output
