"""A probe that cannot look is the scenario's fault, never the model's: a read call that fails
as text (the server's `error_pattern`), `read: json` on a result that is not JSON,
`read: structured` on a result without structured content, a snapshot that is not JSON and a
SQLite file not in the sandbox each raise InfraError naming the probe, where they used to find
a value the matcher judged as the model's `wrong_state`."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp.types import CallToolResult, TextContent

from mcp_farm.schema import SNAPSHOT_TOOL, ServerDef, StateProbe
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.connections import Connected
from mcp_farm.workers.mcp.probes import run_probes


class Answering(Connected):
    """A trial's connections whose one server answers every call with the same result."""

    answer: CallToolResult

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        return self.answer


def _conn(text: str, sandbox: Path | None = None, pattern: str | None = None) -> Answering:
    definition = ServerDef.model_validate(
        {"name": "store", "command": ["true"], "error_pattern": pattern}
    )
    conn = Answering(
        sessions=cast(dict[str, Any], {"store": None}),
        tools={},
        servers={"store": definition},
        control={"store": {SNAPSHOT_TOOL}},
        sandboxes={"store": sandbox} if sandbox else {},
    )
    conn.answer = CallToolResult(content=[TextContent(type="text", text=text)], isError=False)
    return conn


def _probe(**written: Any) -> StateProbe:
    return StateProbe.model_validate({"label": "the entry", "expect": "x"} | written)


def _look(probe: StateProbe, conn: Connected) -> str:
    with pytest.raises(InfraError) as caught:
        anyio.run(run_probes, [probe], conn, None)
    return str(caught.value)


def test_a_read_call_that_fails_as_text_is_an_infra_error_naming_the_probe() -> None:
    probe = _probe(tool="lookup", arguments={"key": "delta"})
    told = _look(probe, _conn("Error: no entry named 'delta'", pattern="^Error:"))
    assert told.startswith("state probe the entry: store.lookup failed: Error: no entry")
    # Without the server's error_pattern the text is a value, judged as the model's.
    (found,) = anyio.run(run_probes, [probe], _conn("Error: no entry named 'delta'"), None)
    assert not found.passed


def test_read_json_of_a_result_that_is_not_json_is_an_infra_error() -> None:
    told = _look(_probe(tool="lookup", read="json"), _conn("alpha = 42"))
    assert "state probe the entry: store.lookup did not answer JSON" in told
    assert "alpha = 42" in told


def test_read_structured_of_a_result_without_structured_content_is_an_infra_error() -> None:
    told = _look(_probe(tool="lookup", read="structured"), _conn("alpha = 42"))
    assert "state probe the entry: store.lookup gave no structured content" in told


def test_a_snapshot_that_is_not_json_is_an_infra_error() -> None:
    told = _look(_probe(snapshot=True), _conn("state: fine"))
    assert f"state probe the entry: store.{SNAPSHOT_TOOL} did not answer JSON" in told


def test_a_sqlite_file_not_in_the_sandbox_is_an_infra_error_with_the_close_names(
    tmp_path: Path,
) -> None:
    with sqlite3.connect(tmp_path / "orders.db") as db:
        db.execute("CREATE TABLE t (n INTEGER)")
    typo = _probe(sqlite="order.db", query="SELECT n FROM t")
    told = _look(typo, _conn("", sandbox=tmp_path))
    assert "state probe the entry: no SQLite file 'order.db' in server store's sandbox" in told
    assert "did you mean 'orders.db'?" in told
    right = _probe(sqlite="orders.db", query="SELECT n FROM t", expect=[])
    (found,) = anyio.run(run_probes, [right], _conn("", sandbox=tmp_path), None)
    assert found.passed and found.found == "[]"


def test_a_file_that_is_absent_is_still_found_as_null(tmp_path: Path) -> None:
    gone = _probe(file="Desktop/old.txt", expect=None)
    (found,) = anyio.run(run_probes, [gone], _conn("", sandbox=tmp_path), None)
    assert found.passed and found.found == "null"
