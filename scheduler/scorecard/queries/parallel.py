"""Running a scorecard's independent queries side by side, each on its own connection."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

WORK_MEM = "256MB"


def run_queries(engine: Engine, queries: dict[str, Callable[[Connection], Any]]) -> dict[str, Any]:
    """Run each query on its own connection, in parallel where the database allows it."""

    def one(query: Callable[[Connection], Any]) -> Any:
        with engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                # Hash aggregation keeps every group's samples in memory, not spilled to disk.
                conn.execute(text(f"set local work_mem = '{WORK_MEM}'"))
                # The queries already run side by side; parallel workers within one only
                # contend with the others for the same cores (the provenance scan spent
                # three processes' CPU to finish early, and nothing waited for it).
                conn.execute(text("set local max_parallel_workers_per_gather = 0"))
            return query(conn)

    if engine.dialect.name != "postgresql":
        return {name: one(query) for name, query in queries.items()}
    with ThreadPoolExecutor(len(queries)) as pool:
        futures = {name: pool.submit(one, query) for name, query in queries.items()}
        return {name: future.result() for name, future in futures.items()}
