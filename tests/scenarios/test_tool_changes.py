"""Tool lists that change mid-session, through the real workspace server over stdio and
streamable HTTP and the SDK's own notifications/tools/list_changed: the model gets the new
list from its next reply, a tool that appeared must be used, one that is gone is wrong_tool."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.scenarios.cassette import load_cassette
from mcp_farm.schema import Scenario, Settings, TrialResult
from mcp_farm.workers.node.runtime import Runtime
from tests.helpers import ideal_script, served_over_http, trial

pytestmark = pytest.mark.integration

SERVER = "mcp_farm.scenarios.servers.workspace"
SUITE = load_suite("conversations")
CHANGING = [s for s in SUITE.scenarios if any(t.event for t in s.turns)]
CHANGES = [
    (s, i) for s in CHANGING for i, turn in enumerate(s.turns) if turn.event == "tools_changed"
]


def _params(pairs: list[tuple[Scenario, int]]) -> list[Any]:
    return [pytest.param(s, i, id=f"{s.id}:turn{i}") for s, i in pairs]


CHANGE_TURNS = _params(CHANGES)
# A turn after a change that expects no call wants a reply saying it cannot be done.
USING_NEW = _params([(s, i) for s, i in CHANGES if s.turns[i].expect])


def _script(scenario: Scenario, i: int, instead: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ideal agent, with turn i's replies replaced by `instead`."""
    script: list[dict[str, Any]] = []
    for k in range(len(scenario.turns)):
        script += instead if k == i else ideal_script(scenario.turn_scenario(k))
    return script


def _run(
    warm: tuple[Runtime, Settings], scenario: Scenario, script: list[dict[str, Any]], **kw: Any
) -> TrialResult:
    runtime, settings = warm
    return runtime.run(trial(scenario, script, suite="conversations", **kw), settings)


def test_the_suite_has_five_conversations_whose_tool_list_changes() -> None:
    assert len(CHANGING) >= 5


@pytest.mark.parametrize(("scenario", "i"), CHANGE_TURNS)
def test_calling_a_tool_the_server_removed_is_wrong_tool_naming_the_removal(
    scenario: Scenario, i: int, warm: tuple[Runtime, Settings]
) -> None:
    ideal = _run(warm, scenario, ideal_script(scenario))
    assert ideal.outcome == "pass", ideal.detail
    removed = ideal.turn_results[i].tools_removed
    assert removed, "every tool change in the suite takes a tool away"
    gone = {"call": {"name": removed[0], "arguments": {}}}
    result = _run(warm, scenario, _script(scenario, i, [gone, {"answer": "Done."}]))
    assert result.outcome == "wrong_tool", result.detail
    assert result.turn_results[i].outcome == "wrong_tool"
    assert "removed from its tool list" in result.turn_results[i].detail
    assert result.tool_calls[result.turn_results[i].first_call].error == (
        f"unknown tool {removed[0]!r}: server workspace no longer offers it"
    )


@pytest.mark.parametrize(("scenario", "i"), USING_NEW)
def test_not_using_the_tool_that_appeared_fails_the_turn(
    scenario: Scenario, i: int, warm: tuple[Runtime, Settings]
) -> None:
    result = _run(warm, scenario, _script(scenario, i, [{"answer": "I can't do that."}]))
    assert result.turn_results[i].outcome == "no_tool_call", result.turn_results[i].detail
    assert set(scenario.turns[i].expect[0].names) <= set(result.turn_results[i].tools_added)


def test_a_turn_records_the_tools_added_and_removed_before_it(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = next(s for s in CHANGING if s.id == "conv.workspace-export-after-upgrade")
    result = _run(warm, scenario, ideal_script(scenario))
    first, second = result.turn_results
    assert (first.tools_added, first.tools_removed) == ([], [])
    assert second.tools_added == ["archive_task", "assign_task", "export_tasks"]
    assert second.tools_removed == ["export_tasks_csv"]


def test_in_a_text_mode_the_system_message_lists_the_new_tools(
    warm: tuple[Runtime, Settings],
) -> None:
    scenario = next(s for s in CHANGING if s.id == "conv.workspace-archive-after-upgrade")
    result = _run(warm, scenario, ideal_script(scenario), prompt="json")
    assert result.outcome == "pass", result.detail
    systems = [m.content for m in result.transcript if m.role == "system"]
    assert "archive_task" not in systems[0] and "export_tasks_csv" in systems[0]
    assert "archive_task" in systems[-1] and "export_tasks_csv" not in systems[-1]


def test_the_next_trial_starts_from_the_servers_first_list(
    warm: tuple[Runtime, Settings],
) -> None:
    upgraded = next(s for s in CHANGING if s.id == "conv.workspace-archive-after-upgrade")
    assert _run(warm, upgraded, ideal_script(upgraded)).outcome == "pass"
    plain = next(s for s in CHANGING if s.id == "conv.workspace-export-after-upgrade")
    result = _run(warm, plain, ideal_script(plain))
    assert result.outcome == "pass", result.detail
    assert result.turn_results[0].tools_removed == []


@pytest.fixture(scope="module")
def workspace_url() -> Iterator[str]:
    """The workspace server over streamable HTTP, started by hand: the farm only connects.
    One for the module, as a real server is shared: its plan belongs to the process, and
    each trial starts from what it lists after its reset (test below)."""
    with served_over_http(SERVER, "workspace") as (url, _proc):
        yield url


def test_a_new_session_on_a_process_left_on_the_pro_plan_starts_from_the_list_after_reset(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    """A session opened on a process another session left on the pro plan is first listed the
    pro tools; the reset brings the free plan back, and at 2026-07-28 the change is announced
    on the listen stream, possibly after the model's first reply. The trial starts from what
    the server lists after its reset: no stale list, no change recorded before turn 1."""
    runtime, settings = warm
    with served_over_http(SERVER, "workspace") as (url, _proc):
        upgrade = _own_change(tmp_path, f"    transport: http\n    url: {url}\n")
        scenario = load_suite(str(upgrade)).scenarios[0]
        left = runtime.run(trial(scenario, ideal_script(scenario), suite=str(upgrade)), settings)
        assert left.outcome == "pass", left.detail  # the process is on the pro plan now
        path, plain = _at_2026_07_28(tmp_path, "http", url)
        capture = settings.model_copy(update={"capture_dir": tmp_path / "cassettes"})
        result = runtime.run(trial(plain, ideal_script(plain), suite=str(path)), capture)
    assert result.outcome == "pass", result.detail
    first, second = result.turn_results
    assert (first.tools_added, first.tools_removed) == ([], [])
    cassette = load_cassette(tmp_path / "cassettes" / "workspace.yaml")
    assert "export_tasks_csv" in {t.name for t in cassette.tools}
    assert "archive_task" not in {t.name for t in cassette.tools}
    assert "export_tasks_csv" in result.provenance.server_tools["workspace"]
    assert "archive_task" not in result.provenance.server_tools["workspace"]
    assert second.tools_removed == ["export_tasks_csv"]


def _over_http(folder: Path, url: str) -> Path:
    """The export-after-upgrade conversation, on the workspace server reached over HTTP."""
    return _export_after_upgrade(
        folder, f"    transport: http\n    url: {url}\n    reset: {{tool: reset_workspace}}\n"
    )


def _export_after_upgrade(folder: Path, definition: str) -> Path:
    """The export-after-upgrade conversation, on the workspace server defined as given."""
    text = Path("scenarios/suites/conversations.yaml").read_text()
    start = text.index("  - id: conv.workspace-export-after-upgrade")
    body = text[start : text.index("  - id: conv.workspace-assign-new-task")]
    path = folder / "changes.yaml"
    path.write_text(
        f"suite: changes\nservers:\n  - name: workspace\n{definition}scenarios:\n{body}"
    )
    return path


AT_2026 = {
    "stdio": f'    command: ["{{python}}", "-m", "{SERVER}"]\n',
    "http": "    transport: http\n    url: URL\n",
}


def _at_2026_07_28(folder: Path, transport: str, url: str) -> tuple[Path, Scenario]:
    """The export-after-upgrade conversation on the workspace server at 2026-07-28, over
    `transport` (`url` for http), and its suite file."""
    definition = AT_2026[transport].replace("URL", url) + (
        '    protocol: "2026-07-28"\n    reset: {tool: reset_workspace}\n'
    )
    path = _export_after_upgrade(folder, definition)
    return path, load_suite(str(path)).scenarios[0]


@pytest.mark.parametrize("transport", sorted(AT_2026))
@pytest.mark.parametrize("mistake", [False, True])
def test_at_2026_07_28_the_change_comes_through_subscriptions_listen_and_is_graded_alike(
    transport: str,
    mistake: bool,
    tmp_path: Path,
    workspace_url: str,
    warm: tuple[Runtime, Settings],
) -> None:
    path, scenario = _at_2026_07_28(tmp_path, transport, workspace_url)
    script = ideal_script(scenario)
    if mistake:
        gone = {"call": {"name": "export_tasks_csv", "arguments": {}}}
        script = _script(scenario, 1, [gone, {"answer": "Done."}])
    runtime, settings = warm
    result = runtime.run(trial(scenario, script, suite=str(path)), settings)
    assert result.outcome == ("wrong_tool" if mistake else "pass"), result.detail
    second = result.turn_results[1]
    assert second.tools_added == ["archive_task", "assign_task", "export_tasks"]
    assert second.tools_removed == ["export_tasks_csv"]


def test_a_server_stops_on_sigterm_while_a_warm_session_listens(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    """After a 2026-07-28 trial over HTTP the warm pool keeps its session, and with it a
    `subscriptions/listen` stream; the server still stops when asked (it ends open requests
    after `STOP_GRACE_S`), instead of waiting for the pool to leave."""
    with served_over_http(SERVER, "workspace") as (url, proc):
        path, scenario = _at_2026_07_28(tmp_path, "http", url)
        runtime, settings = warm
        result = runtime.run(trial(scenario, ideal_script(scenario), suite=str(path)), settings)
        assert result.outcome == "pass", result.detail
        proc.terminate()
        assert proc.wait(timeout=60) is not None  # a hang raises TimeoutExpired


@pytest.mark.parametrize("mistake", [False, True])
def test_over_streamable_http_the_list_change_reaches_the_model(
    mistake: bool, tmp_path: Path, workspace_url: str, warm: tuple[Runtime, Settings]
) -> None:
    path = _over_http(tmp_path, workspace_url)
    scenario = load_suite(str(path)).scenarios[0]
    script = ideal_script(scenario)
    if mistake:
        gone = {"call": {"name": "export_tasks_csv", "arguments": {}}}
        script = _script(scenario, 1, [gone, {"answer": "Done."}])
    runtime, settings = warm
    result = runtime.run(trial(scenario, script, suite=str(path)), settings)
    assert result.outcome == ("wrong_tool" if mistake else "pass"), result.detail
    assert result.turn_results[1].tools_removed == ["export_tasks_csv"]


def test_a_change_the_models_own_call_causes_is_followed_too(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    path = _own_change(tmp_path, f'    command: ["{{python}}", "-m", "{SERVER}"]\n')
    scenario = load_suite(str(path)).scenarios[0]
    runtime, settings = warm
    for mode in ("native", "json"):
        spec = trial(scenario, ideal_script(scenario), suite=str(path), prompt=mode)
        result = runtime.run(spec, settings)
        assert result.outcome == "pass", f"{mode}: {result.detail}"
        assert [c.ok for c in result.tool_calls] == [True, True]


def _own_change(folder: Path, definition: str) -> Path:
    """A scenario whose model switches the workspace to pro and archives a task, on the
    workspace server defined as given (its reset added), and its suite file."""
    path = folder / "own-change.yaml"
    path.write_text(
        f"""\
suite: own-change
servers:
  - name: workspace
{definition}    reset: {{tool: reset_workspace}}
scenarios:
  - id: own.upgrade-then-archive
    version: 1
    tier: simple
    prompt: Switch the workspace to pro, then archive the toner task.
    servers: [workspace]
    expect:
      - tool: set_plan
        params: {{plan: pro}}
        example: {{plan: pro}}
      - tool: archive_task
        params: {{task_id: t2}}
        example: {{task_id: t2}}
    example_answer: Switched to pro and archived t2.
"""
    )
    return path


def test_a_trigger_no_server_lists_is_an_infra_error_naming_the_trigger_not_a_setup_call(
    tmp_path: Path, warm: tuple[Runtime, Settings]
) -> None:
    path = tmp_path / "bad-trigger.yaml"
    path.write_text(
        f"""\
suite: bad-trigger
servers:
  - name: workspace
    command: ["{{python}}", "-m", "{SERVER}"]
    reset: {{tool: reset_workspace}}
scenarios:
  - id: bad.trigger
    version: 1
    tier: simple
    servers: [workspace]
    turns:
      - user: Hello there.
        expect: none
      - user: We're on pro now.
        event: tools_changed
        trigger: {{tool: no_such_trigger}}
        expect: none
"""
    )
    scenario = load_suite(str(path)).scenarios[0]
    runtime, settings = warm
    script = [{"answer": "Hello.", "turn": 0}, {"answer": "Good.", "turn": 1}]
    result = runtime.run(trial(scenario, script, suite=str(path)), settings)
    assert result.outcome == "infra_error"
    assert "turn 2's trigger tool 'no_such_trigger' is not listed by" in result.detail
    assert "setup" not in result.detail
