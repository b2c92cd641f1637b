"""Servers shared by the trials of one worker process: one process, a session per trial."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from pydantic import ValidationError

from mcp_farm.scenarios import servers_for
from mcp_farm.schema import (
    ServerDef,
    SharedLaunch,
)
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.pool import (
    ServerPool,
    shared_launch,
    start_failure,
)
from mcp_farm.workers.mcp.shared import (
    free_port,
    keep_process,
)

pytestmark = pytest.mark.integration
FILESYSTEM = servers_for("basic")["filesystem"]
SEARCH = servers_for("basic")["search"]


@asynccontextmanager
async def pool_of(tmp_path: Path, sessions: int) -> AsyncIterator[ServerPool]:
    """A worker process's pool running `sessions` trials at once; every server stopped after."""
    async with anyio.create_task_group() as tg:
        pool = ServerPool(tg, tmp_path / "pool", 20, sessions=sessions)
        try:
            yield pool
        finally:
            pool.close()
            tg.cancel_scope.cancel()  # servers still lent stop too


async def listing(live_session: ClientSession, path: str = "/Desktop") -> str:
    result = await live_session.call_tool("list_directory", {"path": path})
    assert not result.is_error, result.content
    return str(result.content[0].text)  # type: ignore[union-attr]


def test_trials_in_flight_share_one_process_each_in_its_own_sandbox(tmp_path: Path) -> None:
    async def main() -> None:
        async with pool_of(tmp_path, 4) as pool:
            first = await pool.acquire(FILESYSTEM, ["filesystem"])
            second = await pool.acquire(FILESYSTEM, ["filesystem"])
            assert (pool.started, pool.sessions_opened) == (1, 2)
            assert first.process is second.process is not None
            assert first.sandbox != second.sandbox

            wrote = await first.session.call_tool(
                "write_file", {"path": "/Desktop/mine.txt", "content": "first's"}
            )
            assert not wrote.is_error
            assert "mine.txt" in await listing(first.session)
            assert "mine.txt" not in await listing(second.session)
            assert first.sandbox is not None
            assert (first.sandbox / "Desktop" / "mine.txt").read_text() == "first's"

            # Lent again, the written sandbox is reset in place, on the same session.
            pool.release(first, healthy=True, dirty=True)
            again = await pool.acquire(FILESYSTEM, ["filesystem"])
            assert again is first
            assert "mine.txt" not in await listing(again.session)

    anyio.run(main)


def test_a_server_without_state_is_shared_too(tmp_path: Path) -> None:
    async def main() -> None:
        async with pool_of(tmp_path, 2) as pool:
            lent = [await pool.acquire(SEARCH, ["search"]) for _ in range(3)]
            assert pool.started == 1 and pool.sessions_opened == 3
            answers = [
                await live.session.call_tool("search_documents", {"query": "vpn"}) for live in lent
            ]
            assert all(not a.is_error for a in answers)
            assert len({str(a.content) for a in answers}) == 1

    anyio.run(main)


def test_one_session_per_process_keeps_a_stdio_server_per_trial(tmp_path: Path) -> None:
    async def main() -> None:
        async with pool_of(tmp_path, 1) as pool:
            first = await pool.acquire(FILESYSTEM, ["filesystem"])
            second = await pool.acquire(FILESYSTEM, ["filesystem"])
            assert (pool.started, pool.sessions_opened) == (2, 0)
            assert first.process is None and second.process is None

    anyio.run(main)


def test_a_shared_process_that_died_is_started_again_for_the_next_trial(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        async with pool_of(tmp_path, 4) as pool:
            lent = await pool.acquire(FILESYSTEM, ["filesystem"])
            assert lent.process is not None
            os.kill(lent.process.process.pid, signal.SIGKILL)
            with anyio.fail_after(10):
                await lent.process.process.wait()
            with pytest.raises(Exception):  # noqa: B017 - the transport's own error, whatever it is
                with anyio.fail_after(10):
                    await listing(lent.session)
            # Released healthy or not, a session on a dead process is never lent again.
            pool.release(lent, healthy=True)
            fresh = await pool.acquire(FILESYSTEM, ["filesystem"])
            assert fresh is not lent and fresh.process is not lent.process
            assert pool.started == 2
            assert "todo.txt" in await listing(fresh.session)

    anyio.run(main)


def test_a_shared_server_that_cannot_start_is_an_infra_error(tmp_path: Path) -> None:
    broken = ServerDef(
        name="broken",
        command=["{python}", "-c", "pass"],
        shared=SharedLaunch(command=["{python}", "-c", "import sys; sys.exit(3)"]),
    )

    async def main() -> None:
        async with pool_of(tmp_path, 4) as pool:
            with pytest.raises(InfraError, match="shared MCP server 'broken' failed to start"):
                await pool.acquire(broken, ["broken"])

    anyio.run(main)


def test_a_session_may_not_name_a_folder_outside_the_farms(tmp_path: Path) -> None:
    allowed, outside = tmp_path / "sandboxes", tmp_path / "elsewhere"
    (allowed / "mine").mkdir(parents=True)
    outside.mkdir()
    port = free_port()
    start, _ = shared_launch(FILESYSTEM, None, ["filesystem"], {}, port, allowed)
    log = (tmp_path / "server.log").open("w")

    async def initialize(root: Path) -> None:
        headers = {"X-Farm-Root": str(root)}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http) as (r, w),
            ClientSession(r, w) as session,
        ):
            with anyio.fail_after(10):
                await session.initialize()
                await listing(session, "/")

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            shared = await tg.start(keep_process, "fs", start.argv, start.env, port, log, 20)
            await initialize(allowed / "mine")
            for bad in (outside, allowed, allowed / "missing", allowed / "mine" / ".." / ".."):
                try:
                    await initialize(bad)
                except Exception as exc:  # the refusal arrives inside the transport's group
                    assert "must name a folder inside" in start_failure(exc), start_failure(exc)
                else:
                    pytest.fail(f"a session in {bad} was served")
            shared.stop.set()

    anyio.run(main)
    log.close()


@pytest.mark.parametrize(
    ("launch", "problem"),
    [
        ({"command": ["srv", "--root", "{sandbox}"]}, "put it in `headers`"),
        ({"command": ["srv", "--as", "{attached}"]}, "put it in `headers`"),
        ({"command": ["srv"], "url": "http://127.0.0.1:9000/mcp"}, "must contain `{port}`"),
        ({"command": ["srv"], "headers": {"X-Key": "{env:1BAD}"}}, "environment variable"),
    ],
)
def test_a_shared_launch_with_per_trial_values_in_its_command_is_refused(
    launch: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValidationError, match=problem.replace("{", r"\{").replace("`", "`")):
        ServerDef(name="s", command=["srv"], shared=SharedLaunch.model_validate(launch))


def test_a_sandbox_header_needs_a_sandbox_to_copy() -> None:
    with pytest.raises(ValidationError, match="no `sandbox:` folder"):
        ServerDef.model_validate(
            {
                "name": "s",
                "command": ["srv"],
                "shared": {"command": ["srv", "{port}"], "headers": {"X-Farm-Root": "{sandbox}"}},
            }
        )


def test_a_shared_launch_cannot_take_per_trial_values_from_env() -> None:
    with pytest.raises(
        ValidationError, match=re.escape("cannot use `{sandbox}` or `{attached}` in `env`")
    ):
        ServerDef.model_validate(
            {
                "name": "s",
                "command": ["srv"],
                "sandbox": "home",
                "env": {"CACHE": "{sandbox}/.cache"},
                "shared": {"command": ["srv", "{port}"]},
            }
        )


def test_a_shared_server_exits_when_the_worker_that_started_it_is_gone(tmp_path: Path) -> None:
    # The worker holds the server's stdin open; a killed worker closes it, however it died.
    port = free_port()
    start, _ = shared_launch(FILESYSTEM, None, ["filesystem"], {}, port, tmp_path)
    log = (tmp_path / "server.log").open("w")

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            shared = await tg.start(keep_process, "fs", start.argv, start.env, port, log, 20)
            assert shared.process.stdin is not None
            await shared.process.stdin.aclose()
            with anyio.fail_after(20):  # a server that stayed up fails the test here
                await shared.process.wait()

    anyio.run(main)
    log.close()
