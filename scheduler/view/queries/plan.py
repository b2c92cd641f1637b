"""The statements of one page of a sweep's trials under a filter, and of its capped count.

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
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from mcp_farm.scheduler.scorecard.queries.columns import CONFIG
from mcp_farm.scheduler.view.filters import PAGE_SIZE, FilterError, TrialFilter
from mcp_farm.scheduler.view.queries.where import (
    KEYS,
    order_by,
    order_columns,
    scenarios_expecting,
    sweep_models,
    where_clause,
)

COUNT_CAP = 1_000
"""A page says "more than 1,000" rather than count a big selection to its end (paging goes on
past it while pages are full)."""

LIST_COLUMNS = f"""trial_id, sweep_id, model_id, {CONFIG} as config, scenario_id, tier,
repetition, variant, status, outcome, first_try, route, left_cassette, detail, latency_s,
finished_at"""

PROBE_CAP = 5_000
"""A filter with more trials than this has its page read along the order's index or sorted;
with fewer, its trials are listed (their ids and sort keys) and the page is read by id."""
WALK_CAP = 10_000
"""How many entries of the order's index a page reads, each with its row, to find its trials
before it reads the filter's trials another way: a few tens of ms on either database. Without
the bound, a filter whose trials are rare, or lie far down the order, read the whole sweep row
by row in order (3 s at a million trials on SQLite, a random read of the table per trial)."""


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
        f"{window_start} order by {order_columns(indexed, way, reverse=reverse)} "
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
            f"order by {order_columns(columns, way, reverse=reverse, prefix='+')} {limit}"
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
