"""Every filter of the trial explorer reads the trial table through an index that holds the
filter's column, in PostgreSQL and in SQLite, for every sort and for a page after the first
(keyset): none reads a sweep's every trial to find a rare few. The text search is the one
exception (text inside a text has no B-tree): on PostgreSQL it reads a trigram index
(migration 24) instead, where the pg_trgm extension could be created."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, get_args

import pytest
from sqlalchemy import insert, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.view import queries
from mcp_farm.scheduler.view.filters import PAGE_SIZE, Sort, TrialFilter
from mcp_farm.scheduler.view.pages import pager_query
from mcp_farm.scheduler.view.queries import page_statements, prefer_indexes, where_clause
from mcp_farm.schema.db import (
    SCHEMA_VERSION,
    TEXT_SEARCH_INDEX,
    AnswerScoreRow,
    init_db,
    make_engine,
    schema_version,
    text_search_ready,
)
from tests.conftest import PG_ADMIN, _unavailable

RARE = "repetition = 0 and scenario_id < 's0010'"
"""The few trials (20 of 10,000) each filter selects in sweep `big`."""

FILTERS: list[tuple[str, dict[str, str], tuple[str, ...]]] = [
    # (sweep, filter, columns: any one of them in the trial table's index condition)
    ("big", {"model": "a-rare"}, ("model_id",)),
    ("big", {"model": "a-rare", "config": "a-rare"}, ("prompt_id",)),
    ("big", {"scenario": "s0050"}, ("scenario_id",)),
    ("big", {"tier": "complex"}, ("tier",)),
    ("big", {"tool": "rare_tool"}, ("scenario_id",)),
    ("big", {"wording": "paraphrased"}, ("variant",)),
    ("big", {"outcome": "wrong_tool"}, ("outcome",)),
    ("big", {"status": "pending"}, ("status",)),
    ("big", {"first_try": "yes"}, ("first_try",)),
    ("big", {"route": "by-id"}, ("route",)),
    ("big", {"left_cassette": "yes"}, ("left_cassette",)),
    ("big", {"other_path": "yes"}, ("other_path",)),
    ("big", {"graded": "no"}, ("status", "outcome")),
    ("big", {"graded": "no", "sort": "slowest"}, ("status", "outcome")),
    ("big", {"scoring": "pass-one"}, ("trial_id",)),
    ("ungraded", {"graded": "yes"}, ("outcome", "status")),
]


def _fill(engine: Engine, sweep: str) -> None:
    """One sweep alone in its database: the planner's statistics are per table, and a second
    sweep's values would hide how rare a value is in this one."""
    init_db(engine)
    configs = [("m1", "native"), ("m2", "json")]
    load(engine, sweep, trials(sweep, configs, scenarios(100, seed=5), 50, lambda *_: 0.5, 5))
    with engine.begin() as conn:
        for sql in (
            "update trial set tier = 'simple', variant = 0, first_try = null, route = null, "
            "left_cassette = false, other_path = false, outcome = 'pass', status = 'done', "
            "expected_tools = '[\"common\"]', detail = 'called read_file as expected'",
            f"update trial set tier = 'complex', variant = 1, first_try = true, route = 'by-id',"
            f" left_cassette = true, other_path = true, outcome = 'wrong_tool', "
            f"model_id = 'a-rare', prompt_id = 'a-rare', "
            f"detail = 'called Zebrafish_Quota, which no server offers' where {RARE}",
            "update trial set status = 'pending', outcome = null "
            "where repetition = 1 and scenario_id < 's0010'",
            "update trial set expected_tools = '[\"rare_tool\"]' where scenario_id = 's0000'",
            # The other database's sweep: hardly a trial is graded.
            "update trial set outcome = 'infra_error' where sweep_id = 'ungraded' and not "
            f"({RARE})",
        ):
            conn.execute(text(sql))
        found = conn.execute(text("select trial_id, sweep_id, repetition from trial"))
        now = datetime.now(UTC)
        scores = []
        for trial_id, sweep_id, repetition in found:
            # Every trial of the sweep scored in one pass; the rare few in another.
            passes = ["everything"] + (["pass-one"] if repetition == 0 else [])
            for scoring in passes:
                scores.append(
                    {
                        "trial_id": trial_id,
                        "scoring_id": scoring,
                        "sweep_id": sweep_id,
                        "model_id": "m",
                        "prompt_id": "p",
                        "scenario_id": "s",
                        "outcome": "pass",
                        "efficiency": 1.0,
                        "fairness": 1.0,
                        "adoption": 1.0,
                        "created_at": now,
                    }
                )
        conn.execute(insert(AnswerScoreRow), scores)
        conn.execute(
            text(
                "delete from answer_score where scoring_id = 'pass-one' and trial_id not in "
                f"(select trial_id from trial where {RARE})"
            )
        )
        if engine.dialect.name == "postgresql":
            conn.execute(text("analyze"))


SWEEPS = ("big", "ungraded")


@pytest.fixture(scope="module")
def postgres() -> Iterator[dict[str, Engine]]:
    admin = make_engine(PG_ADMIN).execution_options(isolation_level="AUTOCOMMIT")
    names = {sweep: f"farm_test_{uuid.uuid4().hex[:10]}" for sweep in SWEEPS}
    engines: dict[str, Engine] = {}
    try:
        with admin.connect() as conn:
            for name in names.values():
                conn.execute(text(f'create database "{name}"'))
    except OperationalError as exc:
        _unavailable("PostgreSQL", PG_ADMIN, exc.orig)
    try:
        for sweep, name in names.items():
            engines[sweep] = make_engine(PG_ADMIN.rsplit("/", 1)[0] + f"/{name}")
            _fill(engines[sweep], sweep)
        yield engines
    finally:
        for engine in engines.values():
            engine.dispose()
        with admin.connect() as conn:
            for name in names.values():
                conn.execute(text(f'drop database "{name}" with (force)'))
        admin.dispose()


@pytest.fixture(scope="module")
def sqlite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Engine]:
    folder = tmp_path_factory.mktemp("plans")
    engines = {sweep: make_engine(f"sqlite:///{folder / sweep}.sqlite") for sweep in SWEEPS}
    for sweep, engine in engines.items():
        _fill(engine, sweep)
    return engines


def _statements(conn: Connection, sweep: str, query: dict[str, str]) -> list[tuple[str, dict]]:
    """The page's statements, and those of the page after its first row (a keyset page)."""
    first = page_statements(conn, sweep, TrialFilter.read(query))
    prefer_indexes(conn, TrialFilter.read(query))
    rows = conn.execute(text(first.page_sql), first.params).all()
    assert rows, f"the filter {query} selects nothing: the data does not test it"
    after = page_statements(conn, sweep, TrialFilter.read({**query, "after": rows[0].trial_id}))
    return [
        (first.page_sql, first.params),
        (first.count_sql, first.params),
        (after.page_sql, after.params),
    ]


def _postgres_conditions(plan: list[str]) -> str:
    """The index conditions of the plan but the probes of answer_score by trial (those read
    its scoring pass's rows one trial at a time: the condition names the scoring pass)."""
    return " ".join(line for line in plan if "Index Cond" in line and "scoring_id" not in line)


@pytest.mark.integration
@pytest.mark.parametrize("sort", get_args(Sort))
@pytest.mark.parametrize(("sweep", "query", "columns"), FILTERS, ids=[str(f[1]) for f in FILTERS])
def test_every_filter_reads_postgresql_through_an_index_on_its_column(
    postgres: dict[str, Engine],
    sweep: str,
    query: dict[str, str],
    columns: tuple[str, ...],
    sort: str,
) -> None:
    with postgres[sweep].connect() as conn:
        for sql, params in _statements(conn, sweep, {**query, "sort": sort}):
            plan = [str(r[0]) for r in conn.execute(text(f"explain {sql}"), params)]
            shown = "\n".join(plan)
            assert "Seq Scan on trial" not in shown, shown
            held = _postgres_conditions(plan)
            assert any(re.search(rf"\b{c}\b", held) for c in columns), shown


@pytest.mark.integration
def test_the_text_search_is_an_index_condition_of_the_trigram_index(
    postgres: dict[str, Engine],
) -> None:
    """The search's own term, as the page writes it (lowered, wildcards escaped), is what the
    trigram index answers. Whether the planner takes it depends on the sweep's size: at 10,000
    trials reading the sweep costs less; at a million it takes the index (bench.explorer)."""
    query = {"search": "zebrafish_quota"}
    where, params = where_clause("big", TrialFilter.read(query))
    term = where.split(" and ", 1)[1]
    assert term.startswith("lower(detail) like")
    with postgres["big"].begin() as conn:
        conn.execute(text("set local enable_seqscan = off"))
        sql = f"select trial_id from trial where {term}"
        plan = "\n".join(str(r[0]) for r in conn.execute(text(f"explain {sql}"), params))
        assert f"Bitmap Index Scan on {TEXT_SEARCH_INDEX}" in plan, plan
        assert "Index Cond: (lower((detail)::text) ~~" in plan, plan
        page = page_statements(conn, "big", TrialFilter.read(query))
        found = conn.execute(text(page.page_sql), page.params).all()
    # Matched without regard to case, `_` taken literally: the 20 rare trials, no others.
    assert len(found) == 20 and all("Zebrafish_Quota" in r.detail for r in found)


@pytest.mark.integration
def test_where_the_extension_may_not_be_created_the_database_is_made_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A user who may not create the pg_trgm extension (no CREATE on the database) still gets
    every table at the latest version; the text search works, reading the sweep."""
    admin = make_engine(PG_ADMIN).execution_options(isolation_level="AUTOCOMMIT")
    name, role = f"farm_test_{uuid.uuid4().hex[:10]}", f"farm_noext_{uuid.uuid4().hex[:8]}"
    try:
        with admin.connect() as conn:
            conn.execute(text(f'create database "{name}"'))
            conn.execute(text(f'create role "{role}" login'))
    except OperationalError as exc:
        _unavailable("PostgreSQL", PG_ADMIN, exc.orig)
    base = PG_ADMIN.rsplit("/", 1)[0]
    owner = make_engine(f"{base}/{name}").execution_options(isolation_level="AUTOCOMMIT")
    user = make_engine(base.replace("//postgres", f"//{role}", 1) + f"/{name}")
    try:
        with owner.connect() as conn:
            conn.execute(text(f'revoke create on database "{name}" from public'))
            conn.execute(text(f'grant create, usage on schema public to "{role}"'))
        with caplog.at_level(logging.WARNING, logger="mcp_farm.schema.db.migrate"):
            init_db(user)
        assert schema_version(user) == SCHEMA_VERSION
        said = [r.getMessage() for r in caplog.records if r.name == "mcp_farm.schema.db.migrate"]
        note = text_search_ready(user)  # as `farm db init` asks again
        assert said == [note]
        assert note is not None and "CREATE EXTENSION pg_trgm" in note and "\n" not in note
        load(user, "s", trials("s", [("m1", "native")], scenarios(3, seed=5), 2, lambda *_: 0.5, 5))
        with user.connect() as conn:
            page = page_statements(conn, "s", TrialFilter.read({"search": "x"}))
            assert conn.execute(text(page.page_sql), page.params).all() == []
    finally:
        user.dispose()
        owner.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'drop database "{name}" with (force)'))
            conn.execute(text(f'drop role "{role}"'))
        admin.dispose()


SQLITE_READS_THE_SWEEP = (
    {"wording": "paraphrased"},
    {"graded": "no"},
    {"graded": "yes"},
    {"scoring": "pass-one"},
)
"""Filters SQLite, without statistics, still reads through the sweep's index in sort order: a
range, a list of values or a subquery it does not take for selective. Embedded sweeps are small; the
numbers at scale are PostgreSQL's (README, Numbers)."""
SQLITE_FILTERS = [f for f in FILTERS if f[1] not in SQLITE_READS_THE_SWEEP]


@pytest.mark.parametrize("sort", get_args(Sort))
@pytest.mark.parametrize(
    ("sweep", "query", "columns"), SQLITE_FILTERS, ids=[str(f[1]) for f in SQLITE_FILTERS]
)
def test_every_filter_reads_sqlite_through_an_index_on_its_column(
    sqlite: dict[str, Engine],
    sweep: str,
    query: dict[str, str],
    columns: tuple[str, ...],
    sort: str,
) -> None:
    with sqlite[sweep].connect() as conn:
        for sql, params in _statements(conn, sweep, {**query, "sort": sort}):
            plan = " | ".join(
                str(r[-1]) for r in conn.execute(text(f"explain query plan {sql}"), params)
            )
            assert not re.search(r"SCAN trial(?! USING)", plan), plan
            searched = re.findall(r"SEARCH trial USING (?:COVERING |PRIMARY KEY )?[^|]*", plan)
            assert any(re.search(rf"\b{c}[=><]", s) for s in searched for c in columns), plan


@pytest.mark.integration
@pytest.mark.parametrize("sort", get_args(Sort))
def test_a_keyset_page_starts_from_its_place_in_the_index(
    postgres: dict[str, Engine], sort: str
) -> None:
    with postgres["big"].connect() as conn:
        first = page_statements(conn, "big", TrialFilter.read({"sort": sort}))
        prefer_indexes(conn, TrialFilter.read({"sort": sort}))
        last = conn.execute(text(first.page_sql), first.params).all()[-1]
        after = page_statements(
            conn, "big", TrialFilter.read({"sort": sort, "page": "900", "after": last.trial_id})
        )
        plan = "\n".join(
            str(r[0]) for r in conn.execute(text(f"explain {after.page_sql}"), after.params)
        )
    assert "Seq Scan" not in plan and "offset" not in after.page_sql.lower(), plan
    # The place is part of the index condition: the read starts there, skips nothing.
    starts = r"Index Cond: .*(ROW\(|\b(latency_s|finished_at)\b [<>]=?)"
    assert re.search(starts, plan), plan


SCALED_CAPS = {"WALK_CAP": 100, "PROBE_CAP": 10}
"""The caps at the scale of these 10,000 trials: a window of 100 trials along the order holds
hardly one of the 20 rare ones, and more than 10 is many."""


def _cap(monkeypatch: pytest.MonkeyPatch, name: str, value: int) -> None:
    """Set a cap in each module that reads it: a page's statements and the read of the page."""
    for module in (queries.plan, queries.page):
        if hasattr(module, name):
            monkeypatch.setattr(module, name, value)


@pytest.fixture
def scaled(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SCALED_CAPS.items():
        _cap(monkeypatch, name, value)


ROUTES = [
    # (query, the route: the 9,980 common trials lie all along the order; the 20 rare ones
    # neither at its start nor few enough to list at PROBE_CAP 10, and few at PROBE_CAP 50)
    ({"search": "as expected"}, {}, "walk"),
    ({"search": "zebrafish_quota"}, {}, "sorted"),
    ({"search": "zebrafish_quota"}, {"PROBE_CAP": 50}, "few"),
    ({"scoring": "pass-one"}, {"PROBE_CAP": 50}, "few"),
    ({"config": "a-rare"}, {"PROBE_CAP": 50}, "few"),
    # A cell: the scenario order's index starts with its columns; in another order it is read
    # as any filter is (its page checked, not which way).
    ({"model": "m1", "config": "native"}, {}, "order or any"),
    ({}, {}, "order"),
]


def _routed(
    engine: Engine,
    query: dict[str, str],
    caps: dict[str, int],
    monkeypatch: pytest.MonkeyPatch,
) -> queries.TrialPage:
    for name, value in caps.items():
        _cap(monkeypatch, name, value)
    return queries.trial_page(engine=engine, sweep_id="big", selection=TrialFilter.read(query))


def _reference(engine: Engine, query: dict[str, str]) -> list[str]:
    """The ids the filter selects, in its order: one plain statement, no route chosen."""
    selection = TrialFilter.read(query)
    with engine.connect() as conn:
        where, params = where_clause("big", selection, dialect=conn.dialect.name)
        sql = (
            f"select trial_id from trial where {where} order by {queries.order_by(selection.sort)}"
        )
        return list(conn.execute(text(sql), params).scalars())


def _check_routes(engine: Engine, sort: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for query, caps, route in ROUTES:
        page = _routed(engine, {**query, "sort": sort}, caps, monkeypatch)
        expected_route = route.split(" or ")[sort != "scenario"] if " or " in route else route
        assert expected_route in (page.route, "any"), (query, caps)
        expected = _reference(engine, {**query, "sort": sort})
        assert [r.trial_id for r in page.rows] == expected[:PAGE_SIZE], (query, caps)
        assert page.matched == min(len(expected), queries.COUNT_CAP + 1), (query, caps)


@pytest.mark.parametrize("sort", get_args(Sort))
def test_sqlite_chooses_how_to_read_a_page_by_how_many_trials_the_filter_selects_and_where(
    sqlite: dict[str, Engine], sort: str, scaled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slowest first with a rare search read the sweep row by row along the latency index
    (3.1 s at a million trials): a filter whose trials are not within WALK_CAP of the page's
    start is read through its own index or the sweep's instead, listed by id when few, sorted
    when many. Each way gives the page the order's index would."""
    _check_routes(sqlite["big"], sort, monkeypatch)


@pytest.mark.integration
@pytest.mark.parametrize("sort", get_args(Sort))
def test_postgresql_chooses_how_to_read_a_page_by_how_many_trials_the_filter_selects_and_where(
    postgres: dict[str, Engine], sort: str, scaled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _check_routes(postgres["big"], sort, monkeypatch)


def _sqlite_plan(conn: Connection, sql: str, params: dict[str, Any]) -> str:
    return " | ".join(str(r[-1]) for r in conn.execute(text(f"explain query plan {sql}"), params))


@pytest.mark.parametrize("sort", ["slowest", "fastest", "newest"])
def test_sqlite_reads_a_rare_search_by_the_sweep_and_a_common_one_along_the_order(
    sqlite: dict[str, Engine], sort: str, scaled: None
) -> None:
    """The statements of the routes: the probe and the sorted read go through the sweep's
    index (its rows in table order), never the order's index row by row; the walk reads the
    order's index up to the window's end, a range end of the index read."""
    order_index = "ix_trial_browse_newest" if sort == "newest" else "ix_trial_browse_latency"
    column = "finished_at" if sort == "newest" else "latency_s"
    with sqlite["big"].connect() as conn:
        plan = page_statements(conn, "big", TrialFilter.read({"sort": sort, "search": "zq"}))
        for sql in (plan.probe_sql, plan.sorted_sql, plan.count_sql):
            shown = _sqlite_plan(conn, sql, plan.params)
            assert "SEARCH trial USING INDEX ix_trial_sweep_id (sweep_id=?)" in shown, shown
            assert order_index not in shown, shown
        end = conn.execute(text(plan.window_sql), plan.params).first()
        assert end is not None
        shown = _sqlite_plan(conn, plan.window_sql, plan.params)
        assert f"COVERING INDEX {order_index}" in shown, shown
        bound = {f"w{i}": v for i, v in enumerate(end)}
        shown = _sqlite_plan(conn, plan.walk_sql, plan.params | bound)
        # The window's end is the range's end on the order's column (where the page starts
        # is the other: here, the index's own).
        side = ">" if sort in ("slowest", "newest") else "<"
        assert f"{order_index} (sweep_id=? AND {column}{side}?)" in shown, shown
        assert f"({column}) {side}= (:w0)" in plan.walk_sql, plan.walk_sql
        assert "is not null" not in plan.walk_sql, plan.walk_sql


@pytest.mark.integration
@pytest.mark.parametrize("sort", get_args(Sort))
def test_postgresql_walks_the_order_index_only_up_to_the_window(
    postgres: dict[str, Engine], sort: str, scaled: None
) -> None:
    """Told a row comparison keeps half the sweep, PostgreSQL would read every trial the
    search finds and sort them; the walk keeps to the order's index, the window's end in its
    index condition."""
    order_index = {
        "scenario": "ix_trial_browse",
        "newest": "ix_trial_browse_newest",
    }.get(sort, "ix_trial_browse_latency")
    query = {"sort": sort, "search": "as expected"}
    with postgres["big"].begin() as conn:
        plan = page_statements(conn, "big", TrialFilter.read(query))
        prefer_indexes(conn, TrialFilter.read(query))
        end = conn.execute(text(plan.window_sql), plan.params).first()
        assert end is not None
        conn.execute(text("set local enable_sort = off"))
        bound = {f"w{i}": v for i, v in enumerate(end)}
        explained = conn.execute(text(f"explain {plan.walk_sql}"), plan.params | bound)
        shown = "\n".join(str(r[0]) for r in explained)
    assert re.search(rf"Index Scan (Backward )?using {order_index} on trial", shown), shown
    assert re.search(r"Index Cond: .*(ROW\(|\b(latency_s|finished_at)\b [<>]=)", shown), shown


FORCED = {
    "walk": {"WALK_CAP": 1_000_000, "PROBE_CAP": 0},
    "few": {"WALK_CAP": 0, "PROBE_CAP": 1_000_000},
    "sorted": {"WALK_CAP": 0, "PROBE_CAP": 0},
}
"""Caps that send every page of a filter one way."""
PAGED = {"search": "as expected", "scenario": "s0003"}
"""98 trials: two pages."""


def _check_paging(engine: Engine, sort: str, route: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in FORCED[route].items():
        _cap(monkeypatch, name, value)
    query = {**PAGED, "sort": sort}
    expected = _reference(engine, query)
    assert len(expected) == 98

    def read(f: TrialFilter) -> queries.TrialPage:
        page = queries.trial_page(engine=engine, sweep_id="big", selection=f)
        assert page.route == route and page.matched == 98, (f, page.route, page.matched)
        return page

    selection = TrialFilter.read(query)
    first = read(selection)
    second = read(TrialFilter.read(pager_query(selection, first, +1)))
    assert [r.trial_id for r in first.rows + second.rows] == expected
    assert first.has_next and not second.has_next
    back = read(TrialFilter.read(pager_query(selection, second, -1)))
    assert [r.trial_id for r in back.rows] == expected[:PAGE_SIZE] and back.has_next
    numbered = read(TrialFilter.read({**query, "page": "2"}))
    assert [r.trial_id for r in numbered.rows] == expected[PAGE_SIZE:]
    # Labelled past the count's cap (as a link deep down is), the page reads only what follows
    # its start: nothing is counted.
    deep = TrialFilter.read({**query, "page": "30", "after": expected[PAGE_SIZE - 1]})
    page = queries.trial_page(engine=engine, sweep_id="big", selection=deep)
    assert page.route == route and [r.trial_id for r in page.rows] == expected[PAGE_SIZE:]


@pytest.mark.parametrize("route", FORCED)
@pytest.mark.parametrize("sort", get_args(Sort))
def test_every_way_of_reading_sqlite_pages_them_alike_forwards_and_back(
    sqlite: dict[str, Engine], sort: str, route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _check_paging(sqlite["big"], sort, route, monkeypatch)


@pytest.mark.integration
@pytest.mark.parametrize("route", FORCED)
@pytest.mark.parametrize("sort", get_args(Sort))
def test_every_way_of_reading_postgresql_pages_them_alike_forwards_and_back(
    postgres: dict[str, Engine], sort: str, route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _check_paging(postgres["big"], sort, route, monkeypatch)


def test_the_sqlite_search_ignores_case_and_takes_wildcards_literally(
    sqlite: dict[str, Engine],
) -> None:
    """SQLite's LIKE, told the lowered phrase, matches without regard to the case of ASCII
    letters as lower(detail) did, without copying each detail to lower it."""
    for searched, found in (
        ("ZEBRAFISH_quota", 20),
        ("zebrafish%quota", 0),
        ("zebrafishxquota", 0),
    ):
        page = queries.trial_page(
            engine=sqlite["big"], sweep_id="big", selection=TrialFilter.read({"search": searched})
        )
        assert page.matched == found, searched
        assert all("Zebrafish_Quota" in r.detail for r in page.rows)


def test_a_search_with_three_letters_or_digits_in_a_row_has_trigrams_to_look_up() -> None:
    assert queries.has_trigram("wrong tool") and queries.has_trigram("s0123 (repetition 7)")
    assert not any(queries.has_trigram(s) for s in ("zq", "%_%", "::", "a b c", "ab-cd"))


@pytest.mark.integration
@pytest.mark.parametrize("search", ["zq", "%_%", "::"])
def test_postgresql_leaves_the_trigram_index_aside_when_it_has_nothing_to_look_up(
    postgres: dict[str, Engine], search: str
) -> None:
    """Read for a search it has no trigram of, the trigram index is read whole and every row
    rechecked (0.7–0.9 s at a million trials, twice the sweep's own read). At 10,000 trials the
    planner leaves it aside anyway: the page turns bitmap reads off, which a GIN index needs."""
    query = {"search": search, "sort": "slowest"}
    with postgres["big"].begin() as conn:
        plan = page_statements(conn, "big", TrialFilter.read(query))
        prefer_indexes(conn, TrialFilter.read(query))
        assert conn.execute(text("show enable_bitmapscan")).scalar_one() == "off"
        for sql in (plan.probe_sql, plan.sorted_sql, plan.count_sql):
            shown = "\n".join(str(r[0]) for r in conn.execute(text(f"explain {sql}"), plan.params))
            assert TEXT_SEARCH_INDEX not in shown and "Seq Scan" not in shown, shown


@pytest.mark.integration
def test_postgresql_keeps_bitmap_reads_for_a_search_with_trigrams(
    postgres: dict[str, Engine],
) -> None:
    query = TrialFilter.read({"search": "zebrafish"})
    with postgres["big"].begin() as conn:
        prefer_indexes(conn, query)
        assert conn.execute(text("show enable_bitmapscan")).scalar_one() == "on"
