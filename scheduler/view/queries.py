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
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

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
    if reverse:
        way = "desc" if way == "asc" else "asc"
    return ", ".join(f"{c} {way}" for c in columns)


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


def _like(value: str) -> str:
    """`value` as a LIKE pattern matched anywhere, its own wildcards taken literally."""
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


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
    dialect: str = "postgresql",
) -> tuple[str, dict[str, Any]]:
    """The WHERE clause of a filter and its parameters; every value is bound, none pasted.
    `tool_scenarios`: the scenarios expecting `f.tool` (`scenarios_expecting`)."""
    clauses: list[str] = []
    params: dict[str, Any] = {"sweep": sweep_id}

    def equal(column: str, value: Any) -> None:
        clauses.append(f"{column} = :{column}")
        params[column] = value

    if f.model is not None:
        equal("model_id", f.model)
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
        clauses.append("lower(detail) like :search escape '\\'")
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
    # `+sweep_id`: not through an index (SQLite), where the list of ids is the way in.
    clauses.insert(0, "+sweep_id = :sweep" if by_ids else "sweep_id = :sweep")
    if f.sort in ("slowest", "fastest"):
        clauses.append("latency_s is not null")
    if f.sort == "newest":
        clauses.append("finished_at is not null")
    return " and ".join(clauses), params


@dataclass(frozen=True)
class TrialPage:
    """One page of a sweep's trials under a filter."""

    rows: list[Any]
    matched: int
    """How many trials the filter selects, up to COUNT_CAP + 1."""
    page: int
    more: bool = False
    """Trials follow this page (one row more was read to know)."""

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
    """The SQL of a page of trials and of its capped count, with their parameters."""

    page_sql: str
    count_sql: str
    params: dict[str, Any]
    reverse: bool
    """The page is read backwards (from `before`): its rows come last first."""
    offset: int
    """How many rows of the selection come before the page (its number's, for a keyset page)."""


def page_statements(conn: Connection, sweep_id: str, selection: TrialFilter) -> PageStatements:
    """The statements of `selection`'s page. A page with `after`/`before` starts at that
    trial's place in the order; one without skips whole pages (at most NUMBERED_PAGES)."""
    tools = (
        scenarios_expecting(conn, sweep_id, selection.tool) if selection.tool is not None else None
    )
    where, params = where_clause(
        sweep_id, selection, tool_scenarios=tools, dialect=conn.dialect.name
    )
    count_sql = f"select count(*) from (select 1 from trial where {where} limit {COUNT_CAP + 1}) c"
    offset = (selection.page - 1) * PAGE_SIZE
    columns, way = KEYS[selection.sort]
    start = selection.after or selection.before
    skip = ""
    if start is None:
        skip = f" offset {offset}" if offset else ""
        page_where = where
    else:
        place = conn.execute(
            text(f"select {', '.join(columns)} from trial where trial_id = :t and sweep_id = :s"),
            {"t": start, "s": sweep_id},
        ).first()
        if place is None or any(v is None for v in place):
            given = "after" if selection.after else "before"
            raise FilterError(f"query: {given}={start!r}: no such trial in this order of the sweep")
        forward = selection.after is not None
        compare = ">" if (way == "asc") == forward else "<"
        keys = [f"key{i}" for i in range(len(columns))]
        page_where = (
            f"{where} and ({', '.join(columns)}) {compare} ({', '.join(':' + k for k in keys)})"
        )
        params = params | dict(zip(keys, place, strict=True))
    reverse = selection.before is not None
    page_sql = (
        f"select {LIST_COLUMNS} from trial where {page_where} "
        # One row more than a page: whether another follows, without counting.
        f"order by {order_by(selection.sort, reverse=reverse)} limit {PAGE_SIZE + 1}{skip}"
    )
    return PageStatements(page_sql, count_sql, params, reverse, offset)


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
        rows = list(conn.execute(text(plan.page_sql), plan.params))
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
        # Past the cap the count says no more than that: no need to run it again.
        matched = (
            offset + len(rows)
            if last or offset >= COUNT_CAP
            else int(conn.execute(text(plan.count_sql), plan.params).scalar_one())
        )
    return TrialPage(rows=rows, matched=matched, page=selection.page, more=more)


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
