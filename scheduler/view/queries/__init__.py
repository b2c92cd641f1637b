"""Every SQL statement of the trial explorer: sweeps with their progress, a filtered page of
trials, one trial with its calls, answer scores and judge verdicts. Read only, parameterised.

By what each serves: the sweep list (`sweeps`); a page of a sweep's trials, as a filter and
an order in SQL (`where`), the statements of one page and its count (`plan`), and the way a
page is read (`page`); one trial's page (`trial`). The names the explorer, `farm trials` and
`farm trial show` use are importable from here.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from mcp_farm.scheduler.view.queries.page import Route, TrialPage, prefer_indexes, trial_page
from mcp_farm.scheduler.view.queries.plan import (
    COUNT_CAP,
    PROBE_CAP,
    WALK_CAP,
    PageStatements,
    page_statements,
)
from mcp_farm.scheduler.view.queries.sweeps import SweepLine, sweep_lines
from mcp_farm.scheduler.view.queries.trial import TrialRecord, trial_ids_starting, trial_record
from mcp_farm.scheduler.view.queries.where import has_trigram, order_by, where_clause

__all__ = [
    "COUNT_CAP",
    "PROBE_CAP",
    "WALK_CAP",
    "PageStatements",
    "Route",
    "SweepLine",
    "TrialPage",
    "TrialRecord",
    "has_trigram",
    "order_by",
    "page_statements",
    "prefer_indexes",
    "read_only",
    "sweep_lines",
    "trial_ids_starting",
    "trial_page",
    "trial_record",
    "where_clause",
]


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
