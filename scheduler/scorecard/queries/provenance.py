"""Where a sweep's results came from: its recorded spec, and one provenance per model and node."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

SWEEP_SQL = "select name, spec_json from sweep where sweep_id = :sweep"

# One recorded provenance per model and node stands for the rest (they differ only in
# host-level facts that these keys already separate).
PROVENANCE_SQL = (
    "select model_id, node, min(provenance_json) as low, max(provenance_json) as high"
    " from trial where sweep_id = :sweep and status = 'done'"
    " group by model_id, node"
)


def sweep_record(conn: Connection, sweep_id: str) -> Any | None:
    """The sweep's `name` and `spec_json`, or None when there is no such sweep."""
    return conn.execute(text(SWEEP_SQL), {"sweep": sweep_id}).first()


def skips_left_cassette(conn: Connection, sweep_id: str) -> bool:
    """Whether the sweep leaves trials that left their cassette out of its rates (its
    `left_cassette: exclude`; sweeps recorded before the option count them)."""
    sweep = sweep_record(conn, sweep_id)
    if sweep is None:
        return False
    return bool(json.loads(sweep.spec_json).get("left_cassette") == "exclude")


def provenance_samples(conn: Connection, sweep_id: str) -> Sequence[Any]:
    """Per model and node of the done trials: the lowest and highest provenance JSON."""
    return conn.execute(text(PROVENANCE_SQL), {"sweep": sweep_id}).all()
