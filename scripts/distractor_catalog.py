"""Write scenarios/fixtures/distractors/catalog.json: every bundled server's tools, as listed.

The distractor server mirrors these tools (docs/robustness.md). Run after a bundled server's
tools change: `.venv/bin/python scripts/distractor_catalog.py`.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import anyio

from mcp_farm.scenarios import server_catalog
from mcp_farm.schema.specs import DISTRACTOR_SERVER
from mcp_farm.workers.mcp.pool import ServerPool

OUT = Path(__file__).resolve().parent.parent / "scenarios/fixtures/distractors/catalog.json"


async def _list() -> list[dict[str, object]]:
    servers = {n: s for n, s in server_catalog().items() if n != DISTRACTOR_SERVER}
    tools: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with anyio.create_task_group() as keepers:
            pool = ServerPool(keepers, Path(tmp), 60.0)
            try:
                for name, server in sorted(servers.items()):
                    live = await pool.acquire(server, [name])
                    tools += [
                        {
                            "server": name,
                            "name": t.name,
                            "description": t.description or "",
                            "input_schema": dict(t.input_schema or {}),
                        }
                        for t in live.tools
                    ]
                    pool.release(live, healthy=False)
            finally:
                pool.close()
    return tools


def main() -> None:
    tools = anyio.run(_list)
    OUT.write_text(json.dumps(tools, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(tools)} tools written to {OUT}")


if __name__ == "__main__":
    main()
