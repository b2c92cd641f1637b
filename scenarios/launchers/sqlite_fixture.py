"""Start the reference SQLite MCP server (`mcp-server-sqlite`) on a small shop database.

The fixture keeps the database as SQL text (scenarios/fixtures/shop/shop.sql), readable and
diffable; this wrapper builds `shop.db` from it in the trial's sandbox, then becomes the real
server (exec) on that file. The server answers a failed query with an ordinary result whose
text starts `Database error:` or `Error:`, which its definition's `error_pattern` names.

    python scenarios/launchers/sqlite_fixture.py --server .tools/sqlite/bin/mcp-server-sqlite SANDBOX

It uses only the standard library, so it runs by path without importing the farm.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from pathlib import Path


def build(sandbox: Path) -> Path:
    """shop.db in the sandbox, made from shop.sql there (kept when it already exists)."""
    database = sandbox / "shop.db"
    if not database.exists():
        script = (sandbox / "shop.sql").read_text(encoding="utf-8")
        with sqlite3.connect(database) as conn:
            conn.executescript(script)
        conn.close()
    return database


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", type=Path, required=True, help="the mcp-server-sqlite program")
    parser.add_argument("sandbox", type=Path, help="a fresh copy of scenarios/fixtures/shop")
    args = parser.parse_args()
    if not os.access(args.server, os.X_OK):
        sys.exit(f"{args.server} is missing: install it with `bash scripts/setup.sh --dev`")
    database = build(args.sandbox)
    server = str(args.server)
    os.execv(server, [server, "--db-path", str(database)])


if __name__ == "__main__":
    main()
