"""Reading one page of a sweep's trials: the way its statements are run, and the page as the
explorer and `farm trials` show it.

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

from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from mcp_farm.scheduler.view.filters import PAGE_SIZE, TrialFilter
from mcp_farm.scheduler.view.queries.plan import (
    COUNT_CAP,
    PROBE_CAP,
    PageStatements,
    page_statements,
)
from mcp_farm.scheduler.view.queries.where import has_trigram

Route = Literal["order", "walk", "few", "sorted"]
"""How a page was read (`trial_page`): `order`, the order's own index range, which holds nothing
but the filter's trials (no filter, or one the index starts with: a model, its configuration, a
scenario); `walk`, the order's index within WALK_CAP entries of the page's start, each row
checked against the filter; `few`, the filter's every trial (up to PROBE_CAP) through its own
index or the sweep's, then the page's rows by primary key; `sorted`, the filter's every trial
through that same way in, sorted."""


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
