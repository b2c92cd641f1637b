"""The explorer at depth and at its edges: pages linked by where they start (keyset), a page
number too deep or too big answered in one line, a running sweep's scorecard built off the
request, requests to a name it does not serve refused, Starlette's own errors under the policy,
a favicon, and hidden characters shown."""

from __future__ import annotations

import re
import threading
from html import unescape
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from starlette.testclient import TestClient

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.view import app as app_module
from mcp_farm.scheduler.view import cards as cards_module
from mcp_farm.scheduler.view.app import CSP, create_app, serves
from mcp_farm.scheduler.view.cards import Cards
from mcp_farm.scheduler.view.filters import NUMBERED_PAGES, PAGE_SIZE
from mcp_farm.scheduler.view.queries import read_only
from mcp_farm.schema.db import init_db, make_engine
from mcp_farm.schema.scorecard import Scorecard
from tests.scheduler.view.conftest import LOCAL, farm

LISTED = re.compile(r'href="/trials/([^"]+)"')
NEXT = re.compile(r'<a href="([^"]+)">next ›</a>')
PREVIOUS = re.compile(r'<a href="([^"]+)">‹ previous</a>')


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sweep of 1,200 trials (24 pages) in SQLite, as an embedded farm writes it."""
    data = tmp_path_factory.mktemp("big")
    writer = make_engine(f"sqlite:///{data / 'farm.sqlite'}")
    init_db(writer)
    load(writer, "big", trials("big", [("m", "p")], scenarios(30, seed=2), 40, lambda *_: 0.5, 4))
    with writer.begin() as conn:
        conn.execute(text("update sweep set trial_count = 1200"))
    writer.dispose()
    return data


def reader(data: Path) -> Engine:
    return read_only(make_engine(f"sqlite:///{data / 'farm.sqlite'}"))


@pytest.mark.parametrize("sort", ["scenario", "slowest", "newest"])
def test_next_links_walk_every_trial_once_in_order_and_previous_links_walk_back(
    big: Path, sort: str
) -> None:
    web = TestClient(create_app(reader(big)), base_url=LOCAL)
    pages: list[list[str]] = []
    hrefs: list[str] = []
    href = f"/sweeps/big/trials?sort={sort}"
    while href and len(pages) < 40:
        page = web.get(href)
        assert page.status_code == 200, page.text
        hrefs.append(href)
        pages.append(LISTED.findall(page.text))
        found = NEXT.search(page.text)
        if found:
            # Every link after the first page says where it starts: no offset to skip.
            assert "after=" in unescape(found.group(1)), found.group(1)
        href = unescape(found.group(1)) if found else ""
    seen = [t for p in pages for t in p]
    assert len(pages) == 1200 // PAGE_SIZE and len(seen) == len(set(seen)) == 1200
    # Back from the last page, each previous link opens the page that came before.
    page = web.get(hrefs[-1]).text
    for expected in reversed(pages[:-1]):
        back = PREVIOUS.search(page)
        assert back, "no previous link"
        page = web.get(unescape(back.group(1))).text
        assert LISTED.findall(page) == expected


def test_a_page_past_the_numbered_ones_or_huge_is_a_clear_answer_not_a_500(big: Path) -> None:
    web = TestClient(create_app(reader(big)), base_url=LOCAL, raise_server_exceptions=False)
    for number in (NUMBERED_PAGES + 1, 20_000, 10**30):
        page = web.get("/sweeps/big/trials", params={"page": str(number)})
        assert page.status_code == 400, page.text
        assert f"pages past {NUMBERED_PAGES} open from the page before them" in page.text
    # A numbered page past the end is an empty page, not an error.
    empty = web.get("/sweeps/big/trials", params={"page": str(NUMBERED_PAGES)})
    assert empty.status_code == 200 and "No trial matches" in empty.text
    unknown = web.get("/sweeps/big/trials", params={"after": "no-such-trial"})
    assert unknown.status_code == 400 and "no such trial" in unknown.text


def test_farm_trials_refuses_a_huge_page_in_one_line_and_prints_where_the_next_starts(
    big: Path,
) -> None:
    done = farm("trials", "big", "--page", str(10**20), data=big, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "pages past 200" in done.stderr
    first = farm("trials", "big", data=big, timeout=120)
    found = re.search(r"next: --page 2 --after (\S+)", first.stdout)
    assert found, first.stdout[-500:]
    second = farm("trials", "big", "--page", "2", "--after", found.group(1), data=big)
    assert second.returncode == 0 and found.group(1) not in second.stdout
    assert "next: --page 3 --after" in second.stdout


def test_a_running_sweeps_page_shows_progress_now_and_never_builds_per_request(
    big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = reader(big)
    built: list[str] = []
    release = threading.Event()

    def builder(sweep_id: str) -> Scorecard:
        built.append(sweep_id)
        release.wait(60)
        return build_scorecard(engine=engine, sweep_id=sweep_id)

    writer = make_engine(f"sqlite:///{big / 'farm.sqlite'}")
    with writer.begin() as conn:
        conn.execute(text("update trial set status = 'running' where repetition < 4"))
    try:
        cards = Cards(engine, builder=builder, first_wait_s=0)
        web = TestClient(create_app(engine, cards=cards), base_url=LOCAL)
        for _ in range(5):
            page = web.get("/sweeps/big").text
            # The progress is counted per request; the card is being built, once.
            assert "1080/1200" in page and "being built" in page
            assert 'http-equiv="refresh"' in page
        assert built == ["big"]
        release.set()
        cards.settle(60)
        for _ in range(5):
            page = web.get("/sweeps/big").text
            assert "Per model × configuration" in page and "as of" in page
        assert built == ["big"], "a request rebuilt the card"
        # Trials finish: the card is rebuilt once it is due, in the background, once.
        with writer.begin() as conn:
            conn.execute(text("update trial set status = 'done' where repetition = 0"))
        monkeypatch.setattr(cards_module, "REBUILD_S", 0.0)
        for _ in range(3):
            assert "1110/1200" in web.get("/sweeps/big").text
        cards.settle(60)
        assert built == ["big", "big"]
    finally:
        release.set()
        with writer.begin() as conn:
            conn.execute(text("update trial set status = 'done'"))
        writer.dispose()


@pytest.mark.parametrize(
    ("header", "listening", "answered"),
    [
        ("127.0.0.1:8765", "127.0.0.1", True),
        ("localhost:8765", "127.0.0.1", True),
        ("LOCALHOST.", "127.0.0.1", True),
        ("[::1]:8765", "::1", True),
        ("127.0.0.2", "127.0.0.1", True),
        ("farm.lab:8765", "farm.lab", True),
        ("attacker.example:8765", "127.0.0.1", False),
        ("attacker.example", "farm.lab", False),
        ("127.0.0.1.attacker.example", "127.0.0.1", False),
        ("", "127.0.0.1", False),
        ("anything.example", "0.0.0.0", True),
    ],
)
def test_only_requests_to_a_name_it_serves_are_answered(
    header: str, listening: str, answered: bool
) -> None:
    assert serves(header, listening) is answered


def test_a_request_to_another_name_is_refused_before_any_read(big: Path) -> None:
    web = TestClient(create_app(reader(big)), base_url="http://rebound.example:8765")
    for path in ("/", "/sweeps/big/trials", "/static/view.css"):
        refused = web.get(path)
        assert refused.status_code == 421 and "big" not in refused.text
        assert refused.headers["content-security-policy"] == CSP
    served = TestClient(create_app(reader(big), host="farm.lab"), base_url="http://farm.lab")
    assert served.get("/").status_code == 200


def test_starlettes_own_errors_are_pages_under_the_policy(
    big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    web = TestClient(create_app(reader(big)), base_url=LOCAL, raise_server_exceptions=False)
    missing = web.get("/no/such/page")
    posted = web.post("/")
    for answer, status in ((missing, 404), (posted, 405)):
        assert answer.status_code == status
        assert answer.headers["content-security-policy"] == CSP
        assert answer.headers["x-content-type-options"] == "nosniff"

    def broken(**_: object) -> list[object]:
        raise RuntimeError("a bug <script>")

    monkeypatch.setattr(app_module, "sweep_lines", broken)
    failed = TestClient(create_app(reader(big)), base_url=LOCAL, raise_server_exceptions=False)
    answer = failed.get("/")
    assert answer.status_code == 500 and answer.headers["content-security-policy"] == CSP
    assert "Traceback" not in answer.text and "<script>" not in answer.text


def test_the_favicon_is_served_and_every_page_names_it(big: Path) -> None:
    web = TestClient(create_app(reader(big)), base_url=LOCAL)
    for path in ("/favicon.ico", "/static/icon.svg"):
        icon = web.get(path)
        assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg")
    assert '<link rel="icon" href="/static/icon.svg">' in web.get("/").text


def test_a_direction_override_in_a_trial_shows_as_its_escape_on_pages_and_in_the_terminal(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    writer = make_engine(f"sqlite:///{data / 'farm.sqlite'}")
    init_db(writer)
    load(writer, "bidi", trials("bidi", [("m", "p")], scenarios(1, seed=1), 1, lambda *_: 0, 1))
    hostile = "wrote safe\u202eexe.txt and \u200bhidden\u2066 \x1b[2J"
    with writer.begin() as conn:
        conn.execute(text("update trial set detail = :d, final_answer = :d"), {"d": hostile})
        trial_id = conn.execute(text("select trial_id from trial")).scalar_one()
    writer.dispose()
    web = TestClient(create_app(reader(data)), base_url=LOCAL)
    shown = "wrote safe\\u202eexe.txt and \\u200bhidden\\u2066 \\x1b[2J"
    for path in ("/sweeps/bidi/trials", f"/trials/{trial_id}"):
        page = web.get(path).text
        assert shown in page, path
        assert not re.search("[\u202e\u200b\u2066\x1b]", page), path
    for args in (("trials", "bidi"), ("trial", "show", trial_id)):
        printed = farm(*args, data=data).stdout
        assert shown in printed and not re.search("[\u202e\u200b\u2066\x1b]", printed)
