"""Every fixture server starts with no arguments, as the README shows it, and one that keeps
state then works on a temporary copy of its fixture, never on the fixture itself."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from mcp_farm.scenarios import FIXTURES_DIR
from tests.helpers import (
    free_port,
    wait_until_serving,
)

REPO = Path(__file__).resolve().parents[2]
NOTES_HTTP = [sys.executable, "-m", "mcp_farm.scenarios.servers.notes", "--transport", "http"]
"""The README's command, less the port (a free one is picked)."""
SERVERS_DIR = REPO / "scenarios" / "servers"
# Wrappers that start third-party servers live in scenarios/launchers, not here.
NAMES = sorted(
    ".".join(p.relative_to(SERVERS_DIR).with_suffix("").parts)
    for p in SERVERS_DIR.rglob("*.py")
    if not p.stem.startswith("_") and "__pycache__" not in p.parts
)


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", NAMES)
def test_every_fixture_server_starts_with_no_arguments(name: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", f"mcp_farm.scenarios.servers.{name}"], cwd=REPO
    )

    async def go() -> int:
        async with Client(params) as client:
            return len((await client.list_tools()).tools)

    assert anyio.run(go) > 0


def test_the_readme_notes_server_serves_http_without_root_on_a_scratch_copy(
    tmp_path: Path,
) -> None:
    fixture = FIXTURES_DIR / "notes"
    before = _files(fixture)
    port = free_port()
    log = tmp_path / "stderr.txt"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [*NOTES_HTTP, "--port", str(port)],
            cwd=REPO,
            stderr=err,
        )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until_serving(url, proc, 30, "the HTTP notes server")

        async def go() -> tuple[str, str]:
            async with Client(url) as client:
                made = await client.call_tool(
                    "create_note", {"title": "Scratch test", "content": "written by a test"}
                )
                listed = await client.call_tool("list_notes", {})
                return _text(made), _text(listed)

        made, listed = anyio.run(go)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "Scratch test" in listed and "groceries" in listed, (made, listed)
    assert _files(fixture) == before  # the write went to the copy
    said = log.read_text()
    copy = re.search(r"temporary copy of scenarios/fixtures/notes at (\S+)", said)
    assert copy, said
    assert not Path(copy.group(1)).exists()  # removed when the server stopped
