"""A sweep page's counts link to exactly the trials they count: not the trials still to run,
nor infra or harness errors, nor (when the sweep excludes them) those that left the cassette."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.view.app import create_app
from mcp_farm.scheduler.view.queries import read_only
from mcp_farm.schema.db import init_db, make_engine

COUNT_LINK = re.compile(r'<a href="([^"]*/trials\?[^"]*)">(?:[a-z_]+ )?(\d+)</a>')
"""A cell's `n` (a bare number) or a failure mode's count (`wrong_tool 3`), with its link."""


@pytest.mark.parametrize("counting", ["count", "exclude"])
def test_every_count_on_a_sweep_page_links_to_as_many_trials(tmp_path: Path, counting: str) -> None:
    url = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    writer = make_engine(url)
    init_db(writer)
    load(writer, "sw", trials("sw", [("m", "native")], scenarios(4, seed=3), 6, lambda *_: 0.5, 7))
    with writer.begin() as conn:
        for sql in (
            "update trial set status = 'pending', outcome = null where repetition = 0",
            "update trial set outcome = 'infra_error' where repetition = 1",
            "update trial set outcome = 'harness_error' where repetition = 2 and tier = 'simple'",
            "update trial set left_cassette = true where repetition = 3",
        ):
            conn.execute(text(sql))
        spec = json.dumps({"name": "synthetic", "left_cassette": counting})
        conn.execute(text("update sweep set spec_json = :s, trial_count = 24"), {"s": spec})
    web = TestClient(create_app(read_only(make_engine(url))))
    page = web.get("/sweeps/sw").text
    links = COUNT_LINK.findall(page)
    # The first count is the configuration's n: 24 trials, less 4 pending, 4 infra errors, 2
    # harness errors, and the 4 that left the cassette when the sweep excludes them.
    assert links[0][1] == ("14" if counting == "count" else "10")
    assert len(links) > 10
    for href, n in links:
        listed = web.get(unescape(href)).text
        found = re.search(r"([\d,]+) trial\(s\); page", listed)
        assert found, f"no count on {href}"
        assert found.group(1) == n, f"{href} lists {found.group(1)} trials, the cell says {n}"
