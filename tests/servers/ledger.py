"""Test-only MCP server that keeps a household ledger in a SQLite file in its sandbox
(`--root DIR`, file `ledger.db`), for state probes that read the file with SQL: `add_expense`
writes a row, `list_expenses` reads them back. `--twice` is a later version with a bug: each
expense is written twice, while its answer reads as before (only the state shows it)."""

from __future__ import annotations

import argparse
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    serve,
)

SCHEMA = "create table if not exists expense (item text not null, amount real not null)"


@contextmanager
def _db(root: Path) -> Iterator[sqlite3.Connection]:
    """The ledger, committed and closed when the block ends."""
    with closing(sqlite3.connect(root / "ledger.db")) as db, db:
        db.execute(SCHEMA)
        yield db


def build(args: argparse.Namespace) -> MCPServer:
    server = MCPServer("ledger")
    root = Path(args.root)

    @server.tool()
    def add_expense(item: str, amount: float) -> str:
        """Write one expense into the household ledger."""
        if amount <= 0:
            raise ToolError("an expense needs a positive amount")
        with _db(root) as db:
            for _ in range(2 if args.twice else 1):
                db.execute("insert into expense values (?, ?)", (item, amount))
        return f"{item}: {amount:.2f} written"

    @server.tool()
    def list_expenses() -> str:
        """Every expense in the ledger, one per line."""
        with _db(root) as db:
            rows = db.execute("select item, amount from expense order by rowid").fetchall()
        return "\n".join(f"{item}: {amount:.2f}" for item, amount in rows) or "no expenses"

    return server


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", required=True)
    parser.add_argument("--twice", action="store_true")


if __name__ == "__main__":
    serve(build, add_args=_args)
