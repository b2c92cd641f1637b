"""What `continue` keeps before a turn graded by state: a sandbox folder copied and put back in
place, and the servers it cannot set back named, so the next turn is marked diverged rather
than starting silently from a state nobody expected."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio

from mcp_farm.workers.mcp.connections import Connected
from mcp_farm.workers.mcp.probes import Saved


def _connected(sandboxes: dict[str, Path], others: list[str]) -> Connected:
    names = [*sandboxes, *others]
    sessions = cast(dict[str, Any], dict.fromkeys(names))
    return Connected(sessions=sessions, tools={}, sandboxes=dict(sandboxes))


def test_a_sandbox_is_put_back_as_it_was_and_a_server_without_a_way_back_is_named(
    tmp_path: Path,
) -> None:
    box = tmp_path / "box"
    (box / "Desktop").mkdir(parents=True)
    (box / "Desktop" / "todo.txt").write_text("call the bank")
    conn = _connected({"filesystem": box}, ["third-party"])
    saves = Saved()

    async def turn() -> list[str]:
        await saves.save(conn)
        (box / "Desktop" / "todo.txt").write_text("wrong")
        (box / "Desktop" / "extra.txt").write_text("made by a wrong call")
        return await saves.put_back(conn)

    try:
        unrestored = anyio.run(turn)
    finally:
        saves.close()
    assert unrestored == ["third-party"]
    assert sorted(p.name for p in (box / "Desktop").iterdir()) == ["todo.txt"]
    assert (box / "Desktop" / "todo.txt").read_text() == "call the bank"
    assert saves.scratch is None
