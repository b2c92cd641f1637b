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
from typing import get_args

import pytest
from sqlalchemy import insert, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError

from bench.synthetic import load, scenarios, trials
from mcp_farm.scheduler.view.filters import Sort, TrialFilter
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
