"""PostgreSQL queries whose float arrays arrive as numpy arrays, in binary.

A scorecard's percentiles need every sample: a million trials and two million tool calls send
three million floats. As text, PostgreSQL formats each one and psycopg parses it back into a
Python float (about 1.7 s of a large scorecard, most of it holding the GIL); in binary each
array is a fixed-stride block of (length, big-endian double) pairs that numpy reads at once.
"""

from __future__ import annotations

import struct
from typing import Any, cast

import numpy as np
import psycopg
from psycopg.adapt import Buffer, Loader
from psycopg.pq import Format
from psycopg.rows import namedtuple_row
from sqlalchemy.engine import Connection

# array_send's layout: ndim, has-nulls flag, element type; then (size, lower bound) per
# dimension; then each element as its length (-1 for NULL) followed by its bytes.
_HEADER = struct.Struct(">iiI")
_DIM = struct.Struct(">ii")
_ELEMENT = np.dtype([("length", ">i4"), ("value", ">f8")])


class Float8ArrayLoader(Loader):
    """float8[] in binary → a flat float64 array; NULL elements become NaN."""

    format = Format.BINARY

    def load(self, data: Buffer) -> np.ndarray:
        ndim, has_nulls, _ = _HEADER.unpack_from(data)
        offset = _HEADER.size + ndim * _DIM.size
        count = 1 if ndim else 0
        for d in range(ndim):
            count *= _DIM.unpack_from(data, _HEADER.size + d * _DIM.size)[0]
        if not has_nulls:
            return np.frombuffer(data, _ELEMENT, count, offset)["value"].astype(np.float64)
        values = np.empty(count)
        for i in range(count):
            (length,) = struct.unpack_from(">i", data, offset)
            offset += 4
            values[i] = np.nan if length < 0 else struct.unpack_from(">d", data, offset)[0]
            offset += max(length, 0)
        return values


def fetch_with_arrays(conn: Connection, sql: str, params: dict[str, Any]) -> list[Any]:
    """Run `sql` (psycopg `%(name)s` parameters) in `conn`'s transaction with results in
    binary; float8[] columns come back as numpy arrays, the rest as psycopg loads them."""
    driver = cast(psycopg.Connection[Any], conn.connection.driver_connection)
    with driver.cursor(binary=True, row_factory=namedtuple_row) as cursor:
        # Registered on this cursor only: the connection goes back to the pool unchanged.
        cursor.adapters.register_loader(
            cursor.adapters.types["float8"].array_oid, Float8ArrayLoader
        )
        cursor.execute(sql, params)
        return cursor.fetchall()
