"""A filter and an order of a sweep's trials as SQL: the WHERE clause (every value bound),
the ORDER BY of each sort, and the look-ups a filter needs first (the sweep's models, the
scenarios expecting a tool)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from mcp_farm.scheduler.view.filters import TrialFilter
from mcp_farm.schema import OUTCOMES, UNGRADED

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
    return order_columns(columns, way, reverse=reverse)


def order_columns(columns: tuple[str, ...], way: str, *, reverse: bool, prefix: str = "") -> str:
    """An ORDER BY list of `columns`, all one way or all the other (`reverse`), each name after
    `prefix` (`+`: on SQLite, a column no index is read for)."""
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
