"""A cassette of a server whose tool list changes: capture records every list it announced and
the answer after which it changed; served, the cassette changes its list at the same point and
announces it, so a conversation with `event: tools_changed` runs against the recording. Older
(version 1) cassettes still load."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_farm.scenarios.cassette import load_cassette
from tests.helpers import run_ideal_first

pytestmark = pytest.mark.integration

SCENARIO = """
scenarios:
  - id: taped.archive-after-upgrade
    version: 1
    tier: moderate
    servers: [workspace]
    turns:
      - user: What's on our task board?
        expect:
          - tool: list_tasks
            example: {}
        final_answer: "lease"
        example_answer: "t1 Renew the office lease, t2 Order printer toner."
      - user: We're on the pro plan now. Archive the toner task.
        event: tools_changed
        trigger: {tool: set_plan, arguments: {plan: pro}}
        expect:
          - tool: archive_task
            params: {task_id: t2}
            example: {task_id: t2}
        final_answer: "archiv"
        example_answer: "Archived t2."
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("recording")
    suite = folder / "live.yaml"
    suite.write_text(
        "suite: live\nservers:\n  - name: workspace\n"
        '    command: ["{python}", "-m", "mcp_farm.scenarios.servers.workspace"]\n'
        "    reset: {tool: reset_workspace}\n" + SCENARIO
    )
    result = run_ideal_first(folder, suite, capture_dir=folder / "cassettes")
    assert result.outcome == "pass", result.detail
    return folder / "cassettes" / "workspace.yaml"


def test_capture_records_every_tool_list_and_the_answer_after_which_it_changed(
    recorded: Path,
) -> None:
    cassette = load_cassette(recorded)
    assert cassette.cassette == 3
    first = {t.name for t in cassette.tools}
    assert "export_tasks_csv" in first and "archive_task" not in first
    [pro] = cassette.tool_lists
    assert {"archive_task", "assign_task", "export_tasks"} <= {t.name for t in pro.tools}
    [upgrade] = [c for c in cassette.calls if c.tool == "set_plan"]
    assert upgrade.arguments == {"plan": "pro"}
    assert [[e.tools_changed for e in a.events] for a in upgrade.answers] == [[1]]
    assert "tools_changed: 1" in recorded.read_text()


def test_a_conversation_whose_tools_change_runs_against_the_cassette_as_against_the_server(
    recorded: Path, tmp_path: Path
) -> None:
    suite = tmp_path / "taped.yaml"
    suite.write_text(
        f"suite: taped\nservers:\n  - name: workspace\n    replay: {recorded}\n" + SCENARIO
    )
    result = run_ideal_first(tmp_path, suite)
    assert result.outcome == "pass", result.detail
    assert not result.left_cassette
    assert [c.tool for c in result.tool_calls] == ["list_tasks", "archive_task"]
    assert result.turn_results[1].tools_added == ["archive_task", "assign_task", "export_tasks"]
    assert "export_tasks_csv" in result.turn_results[1].tools_removed


def test_a_version_1_cassette_still_loads_and_is_written_back_as_version_3(tmp_path: Path) -> None:
    from mcp_farm.scenarios.cassette import write_cassette

    old = tmp_path / "notes.yaml"
    old.write_text(
        "cassette: 1\nserver: notes\ntools:\n  - name: read_note\n"
        "calls:\n  - tool: read_note\n    arguments: {note_id: a}\n"
        "    answers:\n      - content: [{type: text, text: hi}]\n"
    )
    cassette = load_cassette(old)
    assert (cassette.cassette, cassette.tool_lists) == (1, [])
    write_cassette(cassette, old)
    assert old.read_text().startswith("cassette: 3\n")
    assert load_cassette(old).calls == cassette.calls


def test_an_event_naming_a_tool_list_the_cassette_lacks_is_an_error_naming_its_field(
    tmp_path: Path,
) -> None:
    from mcp_farm.schema import SpecError

    bad = tmp_path / "notes.yaml"
    bad.write_text(
        "cassette: 2\nserver: notes\ntools:\n  - name: read_note\n"
        "calls:\n  - tool: read_note\n    arguments: {}\n"
        "    answers:\n      - content: []\n        events: [{tools_changed: 1}]\n"
    )
    with pytest.raises(SpecError, match=r"calls\[0\]\.answers\[0\]\.events\[0\]\.tools_changed"):
        load_cassette(bad)
