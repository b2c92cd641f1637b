"""A probe of a server served from its cassette under `record: new_episodes` is refused for
what is true of it: the calls the cassette holds never reach the live server, whose sandbox
is there (issue 43, item 6); not that it "has no sandbox"."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mcp_farm.scenarios import ScenarioError, load_suite


@pytest.mark.parametrize(
    "probe",
    [{"file": "groceries.md"}, {"sqlite": "data.db", "query": "SELECT 1"}],
)
def test_a_file_probe_of_a_new_episodes_server_is_refused_without_saying_it_has_no_sandbox(
    tmp_path: Path, probe: dict[str, str]
) -> None:
    server = {
        "name": "notes",
        "command": ["{python}", "-m", "mcp_farm.scenarios.servers.notes", "--root", "{sandbox}"],
        "sandbox": "notes",
        "replay": str(tmp_path / "notes.yaml"),  # not yet recorded: new_episodes begins it
        "record": "new_episodes",
    }
    scenario = {
        "id": "probed",
        "version": 1,
        "tier": "simple",
        "prompt": "Look at my groceries.",
        "servers": ["notes"],
        "expect": [{"tool": "read_note"}],
        "state": [{**probe, "expect": {"any": True}}],
    }
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({"suite": "nep", "servers": [server], "scenarios": [scenario]}))
    with pytest.raises(ScenarioError) as refused:
        load_suite(str(path))
    said = str(refused.value)
    assert "scenarios[0].state[0]" in said
    assert "has no sandbox" not in said
    assert "never reach a server" in said and "record: new_episodes" in said
