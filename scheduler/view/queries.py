"""Every SQL statement of the trial explorer: sweeps with their progress, a filtered page of
trials, one trial with its calls, answer scores and judge verdicts. Read only, parameterised.

Each page is one or two index range reads (migrations 12, 20, 22 and 23 add the indexes): every
filter but the text search is an index condition, not a check on each row of the sweep. A
sweep's trials in scenario order (`ix_trial_browse`), one outcome of it in the same order
(`ix_trial_browse_outcome`), one tier, wording, first try, route or cassette state in the same
order (migration 22), other path or not (migration 23), by latency (`ix_trial_browse_latency`), newest first
(`ix_trial_browse_newest`); a tool through the scenarios that expect it, a scoring pass through
its answer scores; the text search, on PostgreSQL, through a trigram index of the lowered
detail (`ix_trial_detail_trgm`, migration 24, where the pg_trgm extension could be created);
a trial and its rows by primary key. A page after the first starts where the
one before stopped (keyset: `after`/`before`, a trial id), so page 20,000 costs what page 2 does.
The count above a page stops at COUNT_CAP, so counting never reads a whole sweep. Without the
trigram index (SQLite, or a PostgreSQL user who may not create the extension), and for a
search shorter than three characters (no trigram to look up), the text search reads each row
of the sweep it narrows to: text inside a text has no B-tree.

A filter in an order its index does not hold (slowest first and a search, a tool set, a
scoring pass...) is read one of three ways (Route, `trial_page`), whatever the sort, filter
and database: along the order's index for at most WALK_CAP entries past the page's start (its
trials are common there); else the filter's trials through its own index or the sweep's, up to
PROBE_CAP of them, listed by id and sorted (they are few; this read counts them too); else
every one of them, read the same way and sorted (PostgreSQL, whose statistics say when a
filter selects few, lists them first). None reads the sweep row by row along the order's index
to its end, which is what a rare search sorted by latency cost (3 s at 1M). A search with no
three letters or digits in a row has no trigram to look up: the trigram index is left aside
(`prefer_indexes`).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import event, text
from sqlalchemy.engine import Connection, Engine

from mcp_farm.scheduler.scorecard.queries.columns import CONFIG
from mcp_farm.scheduler.view.filters import PAGE_SIZE, FilterError, TrialFilter
from mcp_farm.schema import OUTCOMES, UNGRADED

COUNT_CAP = 1_000
"""A page says "more than 1,000" rather than count a big selection to its end (paging goes on
past it while pages are full)."""

LIST_COLUMNS = f"""trial_id, sweep_id, model_id, {CONFIG} as config, scenario_id, tier,
repetition, variant, status, outcome, first_try, route, left_cassette, detail, latency_s,
finished_at"""

KEYS = {
    "scenario": (
        ("model_id", "prompt_id", "toolset", "scenario_id", "repetition", "variant", "trial_id"),
        "asc",
    ),
    "slowest": (("latency_s", "trial_id"), "desc"),
    "fastest": (("latency_s", "trial_id"), "asc"),
    "newest": (("finished_at", "trial_id"), "desc"),
}
"""Per `TrialFilter.sort`: the columns a page is ordered by, all one way, so "after this trial"
is one row comparison an index range starts from. Latency and time orders leave trials without
one out (see `where_clause`): a NULL would sort first on one database and last on the other."""


def order_by(sort: str, *, reverse: bool = False) -> str:
    """The ORDER BY list of a sort, or of its reverse (a page read backwards from `before`)."""
    columns, way = KEYS[sort]
    return _order(columns, way, reverse=reverse)


def _order(columns: tuple[str, ...], way: str, *, reverse: bool, prefix: str = "") -> str:
    if reverse:
        way = "desc" if way == "asc" else "asc"
    return ", ".join(f"{prefix}{c} {way}" for c in columns)


GRADED_OUTCOMES = ", ".join(repr(o) for o in OUTCOMES if o not in UNGRADED)
UNGRADED_OUTCOMES = ", ".join(repr(o) for o in UNGRADED)
GRADED = f"(status = 'done' and outcome in ({GRADED_OUTCOMES}))"
"""The trials a scorecard's rates count, as its scan selects them (scorecard/queries/scan.py):
done, and neither an infra nor a harness error. Written as lists of values, not a negation, so
both databases read them through the outcome index."""
UNGRADED_SQL = (
    f"(status in ('pending', 'running', 'cancelled') or outcome in ({UNGRADED_OUTCOMES}))"
)
"""The others: not run (yet), or an infra or harness error; two index ranges, not a scan."""

UNGRADED_IDS_SQL = (
    "trial_id in (select trial_id from trial where sweep_id = :sweep and status in "
    f"('pending', 'running', 'cancelled') union all select trial_id from trial where "
    f"sweep_id = :sweep and outcome in ({UNGRADED_OUTCOMES}))"
)
"""The same on SQLite, which never reads an OR through two indexes: the two index ranges as
one list of ids, which the page then reads by primary key (the sweep's own index left aside:
told `sweep_id = ?`, SQLite reads the whole sweep and checks each row against the list)."""

SCENARIOS_SQL = """
with recursive s(scenario_id) as (
  select min(scenario_id) from trial where sweep_id = :sweep
  union all
  select (select min(t.scenario_id) from trial t
          where t.sweep_id = :sweep and t.scenario_id > s.scenario_id)
  from s where s.scenario_id is not null
)
select s.scenario_id,
  (select t.expected_tools from trial t
   where t.sweep_id = :sweep and t.scenario_id = s.scenario_id limit 1) as expected_tools
from s where s.scenario_id is not null
"""
"""Each scenario of a sweep with the tools it expects: one index probe per scenario (a skip
scan of `ix_trial_browse_scenario`), never a read of the sweep's trials. A scenario's expected
tools are frozen with it at submission: every trial of it carries the same list."""


def read_only(engine: Engine) -> Engine:
    """The engine with every connection it opens set to refuse writes: the explorer reads a
    database that workers may be writing, and must never change it."""

    def _refuse_writes(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        if engine.dialect.name == "postgresql":
            cur.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        else:
            cur.execute("PRAGMA query_only = ON")
        cur.close()

    event.listen(engine, "connect", _refuse_writes)
    return engine


@dataclass(frozen=True)
class SweepLine:
    """One sweep as the sweep list shows it."""

    sweep_id: str
    name: str
    status: str
    created_at: Any
    total: int
    pending: int
    running: int
    cancelled: int

    @property
    def done(self) -> int:
        return max(self.total - self.pending - self.running - self.cancelled, 0)

    @property
    def live(self) -> bool:
        """Trials are still to run: the page showing it refreshes itself."""
        return self.status != "cancelled" and (self.pending + self.running) > 0


SWEEPS_SQL = (
    "select sweep_id, name, status, created_at, trial_count from sweep order by created_at desc"
)
ONE_SWEEP_SQL = (
    "select sweep_id, name, status, created_at, trial_count from sweep where sweep_id = :sweep"
)
# Unfinished trials through (sweep_id, status): a finished sweep costs an empty range.
UNFINISHED_SQL = """
select status, count(*) as n from trial
where sweep_id = :sweep and status in ('pending', 'running', 'cancelled')
group by status
"""


def sweep_lines(*, engine: Engine, sweep_id: str | None = None) -> list[SweepLine]:
    """Every sweep (or the one named), newest first, with its trials by state."""
    found = []
    with engine.connect() as conn:
        listed = (
            conn.execute(text(SWEEPS_SQL))
            if sweep_id is None
            else conn.execute(text(ONE_SWEEP_SQL), {"sweep": sweep_id})
        )
        for s in listed:
            states: dict[str, int] = dict(
                conn.execute(text(UNFINISHED_SQL), {"sweep": s.sweep_id}).all()
            )
            found.append(
                SweepLine(
                    s.sweep_id,
                    s.name,
                    s.status,
                    s.created_at,
                    # Recorded at submission, as `farm sweep status` reads it: never a count.
                    int(s.trial_count),
                    int(states.get("pending", 0)),
                    int(states.get("running", 0)),
                    int(states.get("cancelled", 0)),
                )
            )
    return found


def has_trigram(search: str) -> bool:
    """Whether the trigram index (pg_trgm) has something to look up for `search`: three letters
    or digits in a row (`zq`, `%_%` or `::` have none)."""
    run = 0
    for ch in search:
        run = run + 1 if ch.isalnum() else 0
        if run >= 3:
            return True
    return False


def _like(value: str) -> str:
    """`value` as a LIKE pattern matched anywhere, its own wildcards taken literally."""
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


MODELS_SQL = """
with recursive m(model_id) as (
  select min(model_id) from trial where sweep_id = :sweep
  union all
  select (select min(t.model_id) from trial t where t.sweep_id = :sweep and t.model_id > m.model_id)
  from m where m.model_id is not null
)
select model_id from m where model_id is not null
"""
"""A sweep's models: one probe of `ix_trial_browse` per model (a skip scan)."""


def sweep_models(conn: Connection, sweep_id: str) -> list[str]:
    """The models of a sweep, in order."""
    return [str(m) for m in conn.execute(text(MODELS_SQL), {"sweep": sweep_id}).scalars()]


def scenarios_expecting(conn: Connection, sweep_id: str, tool: str) -> list[str]:
    """The scenarios of a sweep whose trials expect `tool`."""
    found = conn.execute(text(SCENARIOS_SQL), {"sweep": sweep_id})
    return [r.scenario_id for r in found if tool in _names(r.expected_tools)]


def _names(raw: str | None) -> list[str]:
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def where_clause(
    sweep_id: str,
    f: TrialFilter,
    *,
    tool_scenarios: list[str] | None = None,
    models: list[str] | None = None,
    dialect: str = "postgresql",
    unordered: bool = False,
    bounded: bool = False,
) -> tuple[str, dict[str, Any]]:
    """The WHERE clause of a filter and its parameters; every value is bound, none pasted.
    `tool_scenarios`: the scenarios expecting `f.tool` (`scenarios_expecting`). `models`: the
    sweep's models (`sweep_models`), for a configuration without a model. `unordered`:
    for a read in no order (a probe, a count, every match sorted), whose way in should be the
    filter's own index or the sweep's, never the order's index row by row: on SQLite the
    order's column is then no index term (`+latency_s`). `bounded`: the statement bounds the
    order's column itself (which says it is not NULL): SQLite takes one range end of a column
    per side, and it must be the bound."""
    clauses: list[str] = []
    params: dict[str, Any] = {"sweep": sweep_id}

    def equal(column: str, value: Any) -> None:
        clauses.append(f"{column} = :{column}")
        params[column] = value

    if f.model is not None:
        equal("model_id", f.model)
    elif f.config is not None and models is not None:
        # A configuration without a model: its range of the scenario order's index under each
        # of the sweep's models, not a check of each of the sweep's rows.
        names = [f"model_m{i}" for i in range(len(models))]
        clauses.append(f"model_id in ({', '.join(':' + n for n in names)})" if names else "1 = 0")
        params.update(zip(names, models, strict=True))
    if (split := f.prompt_and_toolset()) is not None:
        equal("prompt_id", split[0])
        equal("toolset", split[1])
    for column, value in (
        ("scenario_id", f.scenario),
        ("tier", f.tier),
        ("outcome", f.outcome),
        ("status", f.status),
        ("route", f.route),
    ):
        if value is not None:
            equal(column, value)
    if f.wording is not None:
        clauses.append("variant = 0" if f.wording == "verbatim" else "variant > 0")
    if f.first_try is not None:
        # Not graded, or recorded before first tries were kept, is neither yes nor no.
        equal("first_try", f.first_try == "yes")
    if f.left_cassette is not None:
        equal("left_cassette", f.left_cassette == "yes")
    if f.other_path is not None:
        # NULL without probes: neither yes nor no, as first_try is.
        equal("other_path", f.other_path == "yes")
    by_ids = f.graded == "no" and dialect == "sqlite"
    if f.graded is not None:
        clauses.append(
            GRADED if f.graded == "yes" else UNGRADED_IDS_SQL if by_ids else UNGRADED_SQL
        )
    if f.tool is not None:
        names = [f"tool_s{i}" for i in range(len(tool_scenarios or []))]
        clauses.append(
            f"scenario_id in ({', '.join(':' + n for n in names)})" if names else "1 = 0"
        )
        params.update(zip(names, tool_scenarios or [], strict=True))
    if f.search is not None:
        # SQLite's LIKE ignores the case of ASCII letters, and its lower() changes no others:
        # lower(detail) would cost a copy of each detail (a third of a rare search's time).
        searched = "detail" if dialect == "sqlite" else "lower(detail)"
        clauses.append(f"{searched} like :search escape '\\'")
        params["search"] = _like(f.search.lower())
    if f.scoring is not None:
        # Through the scoring pass's own rows (ix_answer_score_sweep), not a probe per trial.
        clauses.append(
            "trial_id in (select a.trial_id from answer_score a where a.sweep_id = :sweep "
            "and a.scoring_id = :scoring)"
        )
        params["scoring"] = f.scoring
    if dialect == "sqlite":
        # SQLite keeps no statistics unless ANALYZE ran (the explorer only reads): told
        # nothing, it reads the whole sweep in the sort's index order rather than the few
        # trials a filter's own index finds. unlikely() says a filter selects few; the term
        # still reads through its index.
        clauses = [f"unlikely({c})" for c in clauses]
    # `+sweep_id`: not through an index (SQLite), where the list of ids is the way in (and,
    # in no order, a scoring pass's list of ids).
    listed = by_ids or (unordered and dialect == "sqlite" and f.scoring is not None)
    clauses.insert(0, "+sweep_id = :sweep" if listed else "sweep_id = :sweep")
    plus = "+" if unordered and dialect == "sqlite" else ""
    if f.sort in ("slowest", "fastest") and not bounded:
        clauses.append(f"{plus}latency_s is not null")
    if f.sort == "newest" and not bounded:
        clauses.append(f"{plus}finished_at is not null")
    return " and ".join(clauses), params


Route = Literal["order", "walk", "few", "sorted"]
"""How a page was read (`trial_page`): `order`, the order's own index range, which holds nothing
but the filter's trials (no filter, or one the index starts with: a model, its configuration, a
scenario); `walk`, the order's index within WALK_CAP entries of the page's start, each row
checked against the filter; `few`, the filter's every trial (up to PROBE_CAP) through its own
index or the sweep's, then the page's rows by primary key; `sorted`, the filter's every trial
through that same way in, sorted."""

PROBE_CAP = 5_000
"""A filter with more trials than this has its page read along the order's index or sorted;
with fewer, its trials are listed (their ids and sort keys) and the page is read by id."""
WALK_CAP = 10_000
"""How many entries of the order's index a page reads, each with its row, to find its trials
before it reads the filter's trials another way: a few tens of ms on either database. Without
the bound, a filter whose trials are rare, or lie far down the order, read the whole sweep row
by row in order (3 s at a million trials on SQLite, a random read of the table per trial)."""


@dataclass(frozen=True)
class TrialPage:
    """One page of a sweep's trials under a filter."""

    rows: list[Any]
    matched: int
    """How many trials the filter selects, up to COUNT_CAP + 1."""
    page: int
    more: bool = False
    """Trials follow this page (one row more was read to know)."""
    route: Route = "order"
    """How the page was read (Route)."""

    @property
    def capped(self) -> bool:
        return self.matched > COUNT_CAP

    @property
    def pages(self) -> int | None:
        """How many pages there are; None when the count was capped."""
        return None if self.capped else max(1, -(-self.matched // PAGE_SIZE))

    @property
    def has_next(self) -> bool:
        return self.more

    def summary(self) -> str:
        """`123 trial(s); page 2 of 3`, or `more than 1,000 trial(s); page 30`."""
        if self.pages is None:
            return f"more than {COUNT_CAP:,} trial(s); page {self.page}"
        return f"{self.matched:,} trial(s); page {self.page} of {self.pages}"


@dataclass(frozen=True)
class PageStatements:
    """The SQL of a page of trials, of its capped count, and of the other ways to read the
    page when a filter narrows the order's index (`trial_page` chooses), with their
    parameters."""

    page_sql: str
    """The page along the order's index (an index range where the page starts)."""
    count_sql: str
    params: dict[str, Any]
    reverse: bool
    """The page is read backwards (from `before`): its rows come last first."""
    offset: int
    """How many rows of the selection come before the page (its number's, for a keyset page)."""
    sort: str = "scenario"
    narrowed: bool = False
    """The filter selects within the order's index range (any filter but the columns the
    order's index starts with): the page then reads its way in by WALK_CAP and PROBE_CAP."""
    window_sql: str = ""
    """The order's index columns WALK_CAP entries past where the page starts (plus the
    entries a numbered page skips), read from the index alone; no row when fewer follow."""
    walk_sql: str = ""
    """`page_sql` ended at the window's last entry (`:w0`…), so it reads no further, along the
    order's index (named, on SQLite)."""
    tail_sql: str = ""
    """`page_sql` along the order's index (named, on SQLite), where fewer than the window's
    entries follow the page's start."""
    probe_sql: str = ""
    """Up to PROBE_CAP + 1 of the filter's trials, through its own index or the sweep's, in
    the page's order, each with `beyond`: it comes after where the page starts."""
    estimate_sql: str = ""
    """The probe's selection, unlimited: for PostgreSQL's estimate of how many it holds."""
    scoped: bool = False
    """The probe reads only the trials after where the page starts (a keyset page past
    COUNT_CAP, which needs no count): else it reads the filter's every trial and counts them."""
    sorted_sql: str = ""
    """The ids of the page's rows (and the one after), from every trial of the filter after
    where the page starts, read as the probe reads them and sorted."""
    skip: int = 0
    """Rows of the order a numbered page skips (OFFSET); 0 for a keyset page."""

    def fetch_sql(self, count: int) -> str:
        """The page's rows by their ids (`:id0`…, `count` of them), in the page's order."""
        ids = ", ".join(f":id{i}" for i in range(count))
        return (
            f"select {LIST_COLUMNS} from trial where trial_id in ({ids}) "
            f"order by {order_by(self.sort, reverse=self.reverse)}"
        )


ORDER_INDEXES = {
    "scenario": "ix_trial_browse",
    "slowest": "ix_trial_browse_latency",
    "fastest": "ix_trial_browse_latency",
    "newest": "ix_trial_browse_newest",
}
"""Per sort, the index that holds a sweep's trials in its order (schema/db/tables.py)."""
LEADING_FILTERS = {
    "model_id": "model",
    "prompt_id": "config",
    "toolset": "config",
    "scenario_id": "scenario",
}
"""The filters whose columns lead the scenario order's index (ix_trial_browse) after the sweep,
by column: with these alone, the index range holds only the filter's trials."""


def _row(columns: tuple[str, ...], prefix: str = "") -> str:
    return f"({', '.join(prefix + c for c in columns)})"


def page_statements(conn: Connection, sweep_id: str, selection: TrialFilter) -> PageStatements:
    """The statements of `selection`'s page. A page with `after`/`before` starts at that
    trial's place in the order; one without skips whole pages (at most NUMBERED_PAGES)."""
    tools = (
        scenarios_expecting(conn, sweep_id, selection.tool) if selection.tool is not None else None
    )
    models = (
        sweep_models(conn, sweep_id)
        if selection.config is not None and selection.model is None
        else None
    )
    dialect = conn.dialect.name
    where, params = where_clause(
        sweep_id, selection, tool_scenarios=tools, models=models, dialect=dialect
    )
    # The same for a read in no order: through the filter's own index or the sweep's.
    loose, _ = where_clause(
        sweep_id, selection, tool_scenarios=tools, models=models, dialect=dialect, unordered=True
    )
    # And for the walk, which bounds the order's column.
    walked, _ = where_clause(
        sweep_id, selection, tool_scenarios=tools, models=models, dialect=dialect, bounded=True
    )
    offset = (selection.page - 1) * PAGE_SIZE
    columns, way = KEYS[selection.sort]
    # The order's index columns after the sweep: all but the trial id, which no index of
    # latency or time holds.
    indexed = columns[:-1]
    start = selection.after or selection.before
    forward = selection.before is None
    compare = ">" if (way == "asc") == forward else "<"
    keys = [f"key{i}" for i in range(len(columns))]
    sqlite = dialect == "sqlite"
    # On SQLite a comparison of `+column`s reads no index: the way in stays the filter's.
    plus = "+" if sqlite else ""
    skip = 0
    after_start = keyset = loose_keyset = window_start = ""
    if start is None:
        skip = offset
    else:
        place = conn.execute(
            text(f"select {', '.join(columns)} from trial where trial_id = :t and sweep_id = :s"),
            {"t": start, "s": sweep_id},
        ).first()
        if place is None or any(v is None for v in place):
            given = "after" if selection.after else "before"
            raise FilterError(f"query: {given}={start!r}: no such trial in this order of the sweep")
        after_start = f"{_row(columns)} {compare} {_row(tuple(keys), ':')}"
        keyset = f" and {after_start}"
        loose_keyset = f" and {_row(columns, plus)} {compare} {_row(tuple(keys), ':')}"
        window_start = f" and {_row(indexed)} {compare}= {_row(tuple(keys[:-1]), ':')}"
        params = params | dict(zip(keys, place, strict=True))
    reverse = not forward
    ordered = order_by(selection.sort, reverse=reverse)
    limit = f"limit {PAGE_SIZE + 1}" + (f" offset {skip}" if skip else "")
    page_sql = (
        f"select {LIST_COLUMNS} from trial where {where}{keyset} "
        # One row more than a page: whether another follows, without counting.
        f"order by {ordered} {limit}"
    )
    leading = tuple(itertools.takewhile(lambda c: c in params and c in LEADING_FILTERS, indexed))
    filters = selection.model_dump(exclude_defaults=True).keys() - {
        "sort",
        "page",
        "after",
        "before",
    }
    narrowed = bool(filters - {LEADING_FILTERS[c] for c in leading})
    counted = loose if narrowed else where
    count_sql = (
        f"select count(*) from (select 1 from trial where {counted} limit {COUNT_CAP + 1}) c"
    )
    if not narrowed:
        return PageStatements(page_sql, count_sql, params, reverse, offset, selection.sort)
    # The window: the index alone (its leading columns the filter fixes, and where the page
    # starts), WALK_CAP entries on.
    fixed = "".join(f" and {c} = :{c}" for c in leading)
    not_null = "".join(
        f" and {c} is not null" for c in indexed if c in ("latency_s", "finished_at")
    )
    window_sql = (
        f"select {', '.join(indexed)} from trial where sweep_id = :sweep{fixed}{not_null}"
        f"{window_start} order by {_order(indexed, way, reverse=reverse)} "
        f"limit 1 offset {WALK_CAP + skip}"
    )
    bound = [f"w{i}" for i in range(len(indexed))]
    # Up to the window's last entry, ties included: no row past it comes before one inside.
    until = "<=" if compare == ">" else ">="
    # SQLite, told a filter's index finds few, would read its every trial and sort them:
    # the walk names the order's index (but where a list of ids is the way in, graded=no).
    forced = (
        f" indexed by {ORDER_INDEXES[selection.sort]}"
        if sqlite and not walked.startswith("+sweep_id")
        else ""
    )
    walk_sql = (
        f"select {LIST_COLUMNS} from trial{forced} where {walked}{keyset} and "
        f"{_row(indexed)} {until} {_row(tuple(bound), ':')} order by {ordered} {limit}"
    )
    tail_sql = (
        f"select {LIST_COLUMNS} from trial{forced} where {where}{keyset} order by {ordered} {limit}"
    )
    scoped = start is not None and offset >= COUNT_CAP
    estimate_sql = f"select 1 from trial where {loose}{loose_keyset if scoped else ''}"
    beyond = after_start if start is not None and not scoped else "1 = 1"
    probe_sql = (
        f"with p as materialized (select {', '.join(columns)} from trial where {loose}"
        f"{loose_keyset if scoped else ''} limit {PROBE_CAP + 1}) "
        f"select trial_id, {beyond} as beyond from p order by {ordered}"
    )
    if sqlite:
        # `+column`: the sort reads no index, so the rows come the filter's way and are sorted.
        sorted_sql = (
            f"select trial_id from trial where {loose}{loose_keyset} "
            f"order by {_order(columns, way, reverse=reverse, prefix='+')} {limit}"
        )
    else:
        # OFFSET 0 keeps the inner query apart: read the cheapest way, then sorted.
        sorted_sql = (
            f"select trial_id from (select {', '.join(columns)} from trial where {where}{keyset} "
            f"offset 0) s order by {ordered} {limit}"
        )
    return PageStatements(
        page_sql,
        count_sql,
        params,
        reverse,
        offset,
        selection.sort,
        narrowed=True,
        window_sql=window_sql,
        walk_sql=walk_sql,
        tail_sql=tail_sql,
        probe_sql=probe_sql,
        estimate_sql=estimate_sql,
        scoped=scoped,
        sorted_sql=sorted_sql,
        skip=skip,
    )


def prefer_indexes(conn: Connection, selection: TrialFilter) -> None:
    """Keep PostgreSQL on the indexes for the rest of this transaction. It prices a row
    comparison (a keyset page) by its first column alone: deep in a sweep it then reads the
    whole table and sorts it rather than start the index range where the page starts (1 s
    against tens of ms at a million trials). Every page is an index range by design; the text
    search reads the trigram index (migration 24), or, without it, the sweep's trials through
    the sweep's index, never the other sweeps' too."""
    if conn.dialect.name != "postgresql":
        return
    conn.execute(text("set local enable_seqscan = off"))
    # Compiling a plan costs more than any page's read; PostgreSQL would, for a walk it
    # prices by the whole index (100 ms and more).
    conn.execute(text("set local jit = off"))
    if selection.search is not None and not has_trigram(selection.search):
        # Nothing for the trigram index to look up: read through it, it is read whole and every
        # row rechecked, twice the sweep's own read. A GIN index is read by bitmap only.
        conn.execute(text("set local enable_bitmapscan = off"))
    narrowed = selection.model_dump(exclude_defaults=True).keys() - {
        "model",
        "config",
        "sort",
        "page",
        "after",
        "before",
    }
    if selection.sort == "scenario" and not narrowed:
        # No filter of its own: the browse index gives the order from where the page starts;
        # a sort could only come from reading the sweep's other index whole (1.5 s deep down).
        conn.execute(text("set local enable_sort = off"))


def trial_page(*, engine: Engine, sweep_id: str, selection: TrialFilter) -> TrialPage:
    """The page `selection.page` of the trials it selects, PAGE_SIZE to a page."""
    with engine.connect() as conn:
        plan = page_statements(conn, sweep_id, selection)
        prefer_indexes(conn, selection)
        route, rows, counted = _read_page(conn, plan)
        # Read backwards (from `before`), the extra row is one before the page, and the page
        # it was reached from follows it.
        more = plan.reverse or len(rows) > PAGE_SIZE
        rows = rows[:PAGE_SIZE]
        if plan.reverse:
            rows.reverse()
        offset = plan.offset
        # A page that is not full, and not past the end, is the last: the rows count themselves
        # (a text search with few matches then reads the sweep once, not twice). A page read
        # backwards is never the last: the one it was reached from follows it.
        last = not plan.reverse and (0 < len(rows) < PAGE_SIZE or (not rows and offset == 0))
        if counted is not None:
            # The probe read the filter's trials (up to PROBE_CAP): its count is the count.
            matched = min(counted, COUNT_CAP + 1)
        elif last or offset >= COUNT_CAP:
            # Past the cap the count says no more than that: no need to run it again.
            matched = offset + len(rows)
        else:
            matched = int(conn.execute(text(plan.count_sql), plan.params).scalar_one())
    return TrialPage(rows=rows, matched=matched, page=selection.page, more=more, route=route)


def _read_page(conn: Connection, plan: PageStatements) -> tuple[Route, list[Any], int | None]:
    """The page's rows (one more than a page where another follows), how they were read, and
    the filter's count where the read counted it. Unfiltered, or filtered only by what the
    order's index starts with, the page is that index's range. Otherwise: along the order's
    index, up to WALK_CAP entries past the page's start (cheap where the filter's trials are
    common there); where that finds less than the page, the filter's trials through its own
    way in, up to PROBE_CAP + 1 (cheap where they are few, and it counts them); more than
    that, every one of them, sorted. Where PostgreSQL expects PROBE_CAP or fewer, the probe
    goes first. No way reads the sweep's rows in order one by one past WALK_CAP, which is what
    a rare filter cost along the order's index (seconds at 1M)."""
    params = plan.params
    if not plan.narrowed:
        return "order", list(conn.execute(text(plan.page_sql), params)), None
    probed: list[Any] | None = None
    counted: int | None = None
    if _expected(conn, plan) <= PROBE_CAP:
        # PostgreSQL expects few (its statistics; SQLite keeps none): the probe goes first,
        # a read of them alone where an index finds them (the trigram index, a filter's own).
        _sorting(conn, on=True)
        probed, counted = _probe(conn, plan)
        if len(probed) <= PROBE_CAP:
            return "few", _listed(conn, plan, probed), counted
    end = conn.execute(text(plan.window_sql), params).first()
    # PostgreSQL prices a row comparison by its first column: told the window is half the
    # sweep, it would read the filter's every trial and sort them. The walk is a read of the
    # order's index, or it is no cheaper than the ways that follow; those sort.
    _sorting(conn, on=False)
    if end is None:
        # The order's index ends within the window: the page's own read is short.
        return "walk", list(conn.execute(text(plan.tail_sql), params)), counted
    bound = {f"w{i}": v for i, v in enumerate(end)}
    rows = list(conn.execute(text(plan.walk_sql), params | bound))
    if len(rows) > PAGE_SIZE:
        return "walk", rows, counted
    _sorting(conn, on=True)
    if probed is None:
        probed, counted = _probe(conn, plan)
        if len(probed) <= PROBE_CAP:
            return "few", _listed(conn, plan, probed), counted
    ids = list(conn.execute(text(plan.sorted_sql), params).scalars())
    return "sorted", _fetch(conn, plan, ids), counted


def _expected(conn: Connection, plan: PageStatements) -> float:
    """How many trials PostgreSQL expects the filter to select (after where the page starts,
    for a scoped probe); infinite on SQLite, which keeps no statistics."""
    if conn.dialect.name != "postgresql":
        return float("inf")
    found = conn.execute(text(f"explain (format json) {plan.estimate_sql}"), plan.params)
    return float(found.scalar_one()[0]["Plan"]["Plan Rows"])


def _probe(conn: Connection, plan: PageStatements) -> tuple[list[Any], int | None]:
    """The probe's rows, and the filter's count where they counted it."""
    probed = list(conn.execute(text(plan.probe_sql), plan.params))
    # Past PROBE_CAP the probe stopped: it counted the filter's trials only up to there.
    complete = len(probed) <= PROBE_CAP or PROBE_CAP >= COUNT_CAP
    return probed, len(probed) if complete and not plan.scoped else None


def _listed(conn: Connection, plan: PageStatements, probed: list[Any]) -> list[Any]:
    """The page's rows among the probe's, which are every trial the filter selects."""
    ids = [r.trial_id for r in probed if r.beyond][plan.skip : plan.skip + PAGE_SIZE + 1]
    return _fetch(conn, plan, ids)


def _sorting(conn: Connection, *, on: bool) -> None:
    """Let PostgreSQL sort, or keep it to reading an index in order, for this transaction."""
    if conn.dialect.name == "postgresql":
        conn.execute(text(f"set local enable_sort = {'on' if on else 'off'}"))


def _fetch(conn: Connection, plan: PageStatements, ids: list[str]) -> list[Any]:
    """The rows of `ids`, by primary key, in the page's order."""
    if not ids:
        return []
    found = conn.execute(text(plan.fetch_sql(len(ids))), {f"id{i}": t for i, t in enumerate(ids)})
    return list(found)


@dataclass(frozen=True)
class TrialRecord:
    """One trial with everything stored about it."""

    trial: Any
    """The trial row (every column, and `config`)."""
    calls: list[Any]
    """Its tool_call rows, in order."""
    answers: list[Any]
    """Its answer_score rows, one per scoring pass, oldest first."""
    judgements: list[Any]
    """Its judgement rows: per scoring pass, run and criterion."""
    siblings: list[Any]
    """Trials of the same sweep, scenario, repetition and wording in other configurations."""
    replays: list[tuple[str, Any]] = field(default_factory=list)
    """(`replays` or `replayed by`, trial row): the recorded trial this one replays, and the
    trials of later sweeps that replay this one."""


TRIAL_SQL = f"select trial.*, {CONFIG} as config from trial where trial_id = :t"
CALLS_SQL = "select * from tool_call where trial_id = :t order by idx"
ANSWERS_SQL = """
select a.*, s.kind as scoring_kind from answer_score a
left join scoring s on s.scoring_id = a.scoring_id
where a.trial_id = :t order by a.created_at
"""
JUDGEMENTS_SQL = "select * from judgement where trial_id = :t order by scoring_id, run, criterion"
SIBLINGS_SQL = f"""
select trial_id, model_id, {CONFIG} as config, outcome, status from trial
where sweep_id = :sweep and scenario_id = :scenario and repetition = :rep
  and variant = :variant and trial_id <> :t
order by model_id, prompt_id, toolset
"""


SAME_PLACE_SQL = f"""
select trial_id, sweep_id, model_id, {CONFIG} as config, outcome, status from trial
where sweep_id = :sweep and model_id = :model and prompt_id = :prompt and toolset = :toolset
  and scenario_id = :scenario and repetition = :rep and variant = :variant
"""
REPLAYING_SQL = "select sweep_id, spec_json from sweep where spec_json like '%replay%'"


def _replays(conn: Connection, trial: Any) -> list[tuple[str, Any]]:
    """The trial a replay trial replays (same place in the recorded sweep), and the trials
    that replay this one (same place in each sweep whose replay targets name this sweep)."""
    place = {
        "model": trial.model_id,
        "prompt": trial.prompt_id,
        "toolset": trial.toolset,
        "scenario": trial.scenario_id,
        "rep": trial.repetition,
        "variant": trial.variant,
    }
    model = _loads(trial.payload_json).get("model") or {}
    found: list[tuple[str, Any]] = []
    if model.get("adapter") == "replay" and model.get("model"):
        rows = conn.execute(text(SAME_PLACE_SQL), place | {"sweep": model["model"]})
        found += [("replays", r) for r in rows]
    for s in conn.execute(text(REPLAYING_SQL)):
        models = _loads(s.spec_json).get("models") or []
        if any(m.get("adapter") == "replay" and m.get("model") == trial.sweep_id for m in models):
            rows = conn.execute(text(SAME_PLACE_SQL), place | {"sweep": s.sweep_id})
            found += [("replayed by", r) for r in rows]
    return found


def _loads(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def trial_record(*, engine: Engine, trial_id: str) -> TrialRecord | None:
    """The trial and its rows, or None when no trial has that id."""
    with engine.connect() as conn:
        trial = conn.execute(text(TRIAL_SQL), {"t": trial_id}).first()
        if trial is None:
            return None
        by_id = {"t": trial_id}
        siblings = conn.execute(
            text(SIBLINGS_SQL),
            {
                "t": trial_id,
                "sweep": trial.sweep_id,
                "scenario": trial.scenario_id,
                "rep": trial.repetition,
                "variant": trial.variant,
            },
        )
        return TrialRecord(
            trial=trial,
            calls=list(conn.execute(text(CALLS_SQL), by_id)),
            answers=list(conn.execute(text(ANSWERS_SQL), by_id)),
            judgements=list(conn.execute(text(JUDGEMENTS_SQL), by_id)),
            siblings=list(siblings),
            replays=_replays(conn, trial),
        )


def trial_ids_starting(*, engine: Engine, prefix: str, limit: int = 2) -> list[str]:
    """Trial ids that start with `prefix` (a shortened id, as the lists print them)."""
    sql = "select trial_id from trial where trial_id >= :p and trial_id < :q order by trial_id"
    with engine.connect() as conn:
        found = conn.execute(
            text(f"{sql} limit {int(limit)}"), {"p": prefix, "q": prefix + "\uffff"}
        )
        return [str(r[0]) for r in found]
