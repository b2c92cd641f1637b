"""float8[] columns fetched in binary arrive as numpy arrays, equal to what text would give."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from mcp_farm.scheduler.scorecard.queries.pg_arrays import fetch_with_arrays

pytestmark = pytest.mark.integration


def test_float_arrays_arrive_as_numpy_with_nulls_as_nan_and_other_columns_as_usual(
    pg_engine: Engine,
) -> None:
    sql = """
    select array_agg(x / 7.0::float8) as spread, array[1.5, null, 'NaN', -2.25]::float8[] as gaps,
           array[[1.0, 2.0], [3.0, 4.0]]::float8[] as square, '{}'::float8[] as empty,
           array_agg(x) filter (where x > 99)::float8[] as none, %(word)s as word,
           count(*) as n
    from generate_series(1, 50) as x
    """
    with pg_engine.connect() as conn:
        (row,) = fetch_with_arrays(conn, sql, {"word": "ok"})
        (as_text,) = conn.execute(
            text("select array_agg(x / 7.0::float8) from generate_series(1, 50) as x")
        ).one()
    assert isinstance(row.spread, np.ndarray) and row.spread.dtype == np.float64
    assert row.spread.tolist() == as_text  # the same doubles, bit for bit
    assert row.gaps[0] == 1.5 and math.isnan(row.gaps[1]) and math.isnan(row.gaps[2])
    assert row.gaps[3] == -2.25
    assert row.square.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert row.empty.size == 0 and row.none is None
    assert (row.word, row.n) == ("ok", 50)


def test_the_pooled_connection_still_loads_float_arrays_as_lists_afterwards(
    pg_engine: Engine,
) -> None:
    with pg_engine.connect() as conn:
        fetch_with_arrays(conn, "select array[1.0]::float8[] as a", {})
        after = conn.execute(text("select array[1.0]::float8[]")).scalar_one()
    assert after == [1.0]
