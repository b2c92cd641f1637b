"""What `continue` keeps before a turn graded by state: a sandbox folder copied and put back in
place, and what was done to each server recorded; all servers are set back or none, so a
server the model called that has no way back leaves the others as the model's calls made them
(the next turn is marked diverged rather than starting from a state nobody expected)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from mcp_farm.workers.mcp.connections import Connected
from mcp_farm.workers.mcp.probes import Saved


def _connected(sandboxes: dict[str, Path], others: list[str]) -> Connected:
    names = [*sandboxes, *others]
    sessions = cast(dict[str, Any], dict.fromkeys(names))
    return Connected(sessions=sessions, tools={}, sandboxes=dict(sandboxes))


def _box(tmp_path: Path) -> Path:
    box = tmp_path / "box"
    (box / "Desktop").mkdir(parents=True)
    (box / "Desktop" / "todo.txt").write_text("call the bank")
    return box


def _turn(box: Path, called: set[str]) -> dict[str, str]:
    conn = _connected({"filesystem": box}, ["third-party"])
    saves = Saved()

    async def turn() -> dict[str, str]:
        await saves.save(conn)
        (box / "Desktop" / "todo.txt").write_text("wrong")
        (box / "Desktop" / "extra.txt").write_text("made by a wrong call")
        return dict(await saves.put_back(conn, called))

    try:
        return anyio.run(turn)
    finally:
        saves.close()
        assert saves.scratch is None


@pytest.mark.parametrize("called", [set(), {"filesystem"}])
def test_a_sandbox_is_put_back_as_it_was_when_the_server_without_a_way_back_was_not_called(
    tmp_path: Path, called: set[str]
) -> None:
    box = _box(tmp_path)
    done = _turn(box, called)
    assert done == {"filesystem": "copied_back", "third-party": "untouched"}
    assert sorted(p.name for p in (box / "Desktop").iterdir()) == ["todo.txt"]
    assert (box / "Desktop" / "todo.txt").read_text() == "call the bank"


def test_no_server_is_set_back_when_one_the_model_called_has_no_way_back(
    tmp_path: Path,
) -> None:
    box = _box(tmp_path)
    done = _turn(box, {"filesystem", "third-party"})
    assert done == {"filesystem": "left", "third-party": "cannot"}
    # The model's writes stay where they were made: none undone on one server only.
    assert (box / "Desktop" / "todo.txt").read_text() == "wrong"
    assert (box / "Desktop" / "extra.txt").exists()
