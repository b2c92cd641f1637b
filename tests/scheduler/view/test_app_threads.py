"""The explorer's pages read the database off the event loop: a slow query holds up its own
request, not the others."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import event

from mcp_farm.scheduler.view.app import create_app
from mcp_farm.scheduler.view.queries import read_only
from mcp_farm.schema.db import init_db, make_engine

WAIT_S = 10


def test_a_slow_query_does_not_hold_up_another_page(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'farm.sqlite'}"
    init_db(make_engine(url))
    engine = read_only(make_engine(url))
    entered, gate = threading.Event(), threading.Event()
    released: list[bool] = []

    @event.listens_for(engine, "before_cursor_execute")
    def _hold(_c: Any, _cur: Any, _sql: str, params: Any, _ctx: Any, _many: bool) -> None:
        # The query of one trial stalls until the test has had another page served.
        if "slow" in str(params):
            entered.set()
            released.append(gate.wait(WAIT_S))

    async def both() -> int:
        transport = httpx.ASGITransport(app=create_app(engine))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            slow = asyncio.create_task(client.get("/trials/slow"))
            assert await asyncio.to_thread(entered.wait, WAIT_S), "the slow query never ran"
            other = await asyncio.wait_for(client.get("/"), WAIT_S)
            gate.set()
            assert (await slow).status_code == 404
            return other.status_code

    assert asyncio.run(both()) == 200
    assert released == [True], "the other page waited for the slow query to give up"
