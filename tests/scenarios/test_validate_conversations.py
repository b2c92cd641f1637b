"""Validate reads a conversation as its turns say: each turn's `allowed_extra` tools must be
listed by its servers, and a `from_key` with `from_turn` is probed on the step of that earlier
turn, through the real workspace server."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_farm.scenarios.tool_checks import ToolSchemas, tool_problems
from mcp_farm.scenarios.validate import check_file
from mcp_farm.schema import Settings, Suite
from mcp_farm.schema.tasks.messages import CallCheckRequest, SuiteToCheck
from mcp_farm.workers.mcp.listing import check_calls


def _conversation(extra: list[str]) -> Suite:
    return Suite.model_validate(
        {
            "suite": "t",
            "scenarios": [
                {
                    "id": "talk",
                    "version": 1,
                    "tier": "simple",
                    "servers": ["fs"],
                    "turns": [
                        {"user": "hi", "expect": [{"tool": "read"}]},
                        {"user": "and?", "expect": [{"tool": "read"}], "allowed_extra": extra},
                    ],
                }
            ],
        }
    )


TOOLS: ToolSchemas = {"fs": {"read": {}, "peek": {}}}


def test_a_turns_allowed_extra_tool_that_no_server_lists_is_named_at_the_turn() -> None:
    found = tool_problems(_conversation(["peek", "pek"]), "t.yaml", TOOLS)
    assert [(p.field, p.problem) for p in found] == [
        (
            "scenarios[0].turns[1].allowed_extra[1]",
            "'pek' is not a tool of fs; did you mean 'peek'?",
        )
    ]


def _changing(trigger: str) -> Suite:
    return Suite.model_validate(
        {
            "suite": "t",
            "scenarios": [
                {
                    "id": "change",
                    "version": 1,
                    "tier": "simple",
                    "servers": ["fs"],
                    "turns": [
                        {"user": "hi", "expect": [{"tool": "read"}]},
                        {
                            "user": "and now?",
                            "event": "tools_changed",
                            "trigger": {"tool": trigger, "arguments": {}},
                            "expect": [{"tool": "read"}],
                        },
                    ],
                }
            ],
        }
    )


def test_a_tool_list_trigger_that_no_server_lists_is_named_at_the_turn() -> None:
    # Issue 36, item 21: it passed validate and became an infra_error at run time.
    found = tool_problems(_changing("pek"), "t.yaml", TOOLS)
    assert [(p.field, p.problem) for p in found] == [
        ("scenarios[0].turns[1].trigger.tool", "'pek' is not a tool of fs; did you mean 'peek'?")
    ]
    assert tool_problems(_changing("peek"), "t.yaml", TOOLS) == []


def test_a_turns_allowed_extra_tools_that_are_listed_pass() -> None:
    assert tool_problems(_conversation(["peek", "read"]), "t.yaml", TOOLS) == []


WORKSPACE = """\
suite: chained
servers:
  - name: workspace
    command: ["{python}", "-m", "mcp_farm.scenarios.servers.workspace"]
    reset: {tool: reset_workspace}
scenarios:
"""


def _chained(sid: str, key: str) -> str:
    # Turn 1's own step 0 (list_tasks) answers a board with no `title` at its top: reading
    # the key there instead of in turn 0's add_task would report a problem that is not one.
    return f"""\
  - id: {sid}
    version: 1
    tier: simple
    servers: [workspace]
    turns:
      - user: Add a task Book the dinner.
        expect:
          - tool: add_task
            example: {{title: Book the dinner}}
      - user: Show the board, then add that task once more.
        expect:
          - tool: list_tasks
            example: {{}}
          - tool: add_task
            params: {{title: {{derived_from_step: 0, from_turn: 0, from_key: {key}}}}}
            example: {{title: Book the dinner}}
"""


def test_a_from_key_with_from_turn_is_probed_on_that_turns_step(
    settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "chained.yaml"
    text = WORKSPACE + _chained("chained.right", "title") + _chained("chained.wrong", "name")
    path.write_text(text, encoding="utf-8")
    suite, problems = check_file(path)
    assert suite is not None and problems == []
    request = CallCheckRequest(suites=[SuiteToCheck(source=str(path), suite=suite)])
    found = {p.field: p.problem for p in check_calls(request, settings).problems}
    field = "scenarios[1].turns[1].expect[1].params.title.from_key"
    assert list(found) == [field]
    assert "step 0's example call (add_task)" in found[field]
    assert "from_key 'name' picks nothing" in found[field]


def _upgrade(sid: str, trigger: str) -> str:
    return f"""\
  - id: {sid}
    version: 1
    tier: simple
    servers: [workspace]
    turns:
      - user: Export the tasks.
        expect:
          - tool: export_tasks_csv
            example: {{}}
      - user: We are on pro now. Archive the toner task.
        event: tools_changed
        trigger: {trigger}
        expect:
          - tool: archive_task
            example: {{task_id: t2}}
"""


def test_a_trigger_that_announces_no_tool_list_change_is_named_at_the_turn(
    settings: Settings, tmp_path: Path
) -> None:
    # Issue 36, item 21: a trigger that changes nothing passed validate and made every trial
    # an infra_error at run time. The plan is already free: set_plan announces nothing.
    path = tmp_path / "changes.yaml"
    path.write_text(
        WORKSPACE
        + _upgrade("upgrade.right", "{tool: set_plan, arguments: {plan: pro}}")
        + _upgrade("upgrade.silent", "{tool: set_plan, arguments: {plan: free}}"),
        encoding="utf-8",
    )
    suite, problems = check_file(path)
    assert suite is not None and problems == []
    request = CallCheckRequest(suites=[SuiteToCheck(source=str(path), suite=suite)])
    found = {p.field: p.problem for p in check_calls(request, settings).problems}
    assert list(found) == ["scenarios[1].turns[1].trigger"]
    assert (
        "workspace.set_plan announced no tool-list change" in found["scenarios[1].turns[1].trigger"]
    )


OFFICE = Path("scenarios/suites/conversations.yaml").read_text(encoding="utf-8")


def _office(scenario_id: str, server: str = "office") -> str:
    start = OFFICE.index(f"  - id: {scenario_id}\n")
    end = OFFICE.find("\n  - id: ", start + 1)
    return OFFICE[start : end + 1].replace("servers: [office]", f"servers: [{server}]")


@pytest.mark.parametrize("server", ["office", "office_2026"])
def test_an_elicit_field_no_request_asks_for_is_named_with_the_fields_asked(
    server: str, settings: Settings, tmp_path: Path
) -> None:
    # Issue 36, item 20: a typo in `field:` matched no request, which was declined unscripted.
    right = _office("conv.office-book-room-headcount", server)
    typo = right.replace("{field: people,", "{field: peeple,").replace(
        "id: conv.office-book-room-headcount", "id: conv.office-book-room-typo"
    )
    path = tmp_path / "asks.yaml"
    path.write_text(f"suite: asks\nscenarios:\n{right}{typo}", encoding="utf-8")
    suite, problems = check_file(path)
    assert suite is not None and problems == []
    request = CallCheckRequest(suites=[SuiteToCheck(source=str(path), suite=suite)])
    found = {p.field: p.problem for p in check_calls(request, settings).problems}
    field = "scenarios[1].turns[1].elicit[0].field"
    assert list(found) == [field]
    assert found[field].startswith(f"'peeple' is not a field of any form {server} asked for")
    assert "(they ask for: people); did you mean 'people'?" in found[field]


POKER = '''\
"""A server whose `poke` announces a tool-list change that changes nothing."""
from mcp_farm.scenarios.servers._sdk import Context, MCPServer, serve


def build() -> MCPServer:
    server = MCPServer("poker")

    @server.tool()
    def read_board() -> str:
        """The board."""
        return "empty"

    @server.tool()
    async def poke(ctx: Context) -> str:
        """Announce a change."""
        await ctx.session.send_tool_list_changed()
        return "poked"

    return server


if __name__ == "__main__":
    serve(lambda _a: build())
'''


def test_a_trigger_whose_announced_change_leaves_the_list_as_it_was_is_named(
    settings: Settings, tmp_path: Path
) -> None:
    server = tmp_path / "poker.py"
    server.write_text(POKER, encoding="utf-8")
    path = tmp_path / "poke.yaml"
    path.write_text(
        f"""\
suite: poke
servers:
  - name: poker
    command: ["{{python}}", "{server}"]
scenarios:
  - id: poke.nothing
    version: 1
    tier: simple
    servers: [poker]
    turns:
      - user: Show the board.
        expect:
          - tool: read_board
            example: {{}}
      - user: And now?
        event: tools_changed
        trigger: {{tool: poke, arguments: {{}}}}
        expect:
          - tool: read_board
            example: {{}}
""",
        encoding="utf-8",
    )
    suite, problems = check_file(path)
    assert suite is not None and problems == []
    request = CallCheckRequest(suites=[SuiteToCheck(source=str(path), suite=suite)])
    found = {p.field: p.problem for p in check_calls(request, settings).problems}
    assert list(found) == ["scenarios[0].turns[1].trigger"]
    assert (
        "poker.poke announced a tool-list change, but poker lists the same tools"
        in found["scenarios[0].turns[1].trigger"]
    )


SANDBOXED = """\
suite: sandboxed
servers:
  - name: datafs
    command: ["{python}", "-m", "mcp_farm.scenarios.servers.filesystem", "--root", "{sandbox}"]
    sandbox: ./data
scenarios:
"""


def _from_data(sid: str, key: str) -> str:
    return f"""\
  - id: {sid}
    version: 1
    tier: simple
    prompt: Read records.json, then open the file it names.
    servers: [datafs]
    expect:
      - tool: read_file
        example: {{path: /records.json}}
      - tool: read_file
        params: {{path: {{derived_from_step: 0, from_key: {key}}}}}
        example: {{path: notes.txt}}
"""


def test_a_from_key_on_a_sandbox_folders_data_is_probed_on_that_data(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 36 item 16 reported "picks nothing" for data from a `sandbox:` folder, as if the
    # probe saw an empty server. The folder is read beside the suite file, from any working
    # folder: the right key passes and only the wrong one is reported.
    home = tmp_path / "suite"
    (home / "data").mkdir(parents=True)
    (home / "data" / "records.json").write_text('{"next": "notes.txt"}', encoding="utf-8")
    (home / "data" / "notes.txt").write_text("hello", encoding="utf-8")
    path = home / "sandboxed.yaml"
    path.write_text(
        SANDBOXED + _from_data("data.right", "next") + _from_data("data.wrong", "nope"),
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    suite, problems = check_file(path)
    assert suite is not None and problems == []
    request = CallCheckRequest(suites=[SuiteToCheck(source=str(path), suite=suite)])
    found = {p.field: p.problem for p in check_calls(request, settings).problems}
    assert list(found) == ["scenarios[1].expect[1].params.path.from_key"], found
    assert "holds no key 'nope'" in next(iter(found.values()))


def _plan_upgrade(sid: str, plan: str) -> str:
    return f"""\
  - id: {sid}
    version: 1
    tier: moderate
    prompt: Move us to the pro plan, then archive the toner task.
    servers: [workspace]
    expect:
      - tool: set_plan
        params: {{plan: pro}}
        example: {{plan: {plan}}}
      - tool: archive_task
        params: {{task_id: t2}}
        example: {{task_id: t2}}
      - tool: export_tasks
        params: {{format: {{exact: markdown}}}}
        example: {{format: markdown}}
"""


def test_a_tool_the_scenarios_own_expected_call_brings_is_a_tool_of_its_server(
    settings: Settings, tmp_path: Path
) -> None:
    # Issue 43, item 10: set_plan (an expected call, not a trigger) makes workspace list
    # archive_task and export_tasks; validate checked the later steps against the list at the
    # start and said "'archive_task' is not a tool of workspace", though the ideal agent passes.
    # An example that does not upgrade brings nothing, and the same steps are named.
    path = tmp_path / "upgrade.yaml"
    path.write_text(
        WORKSPACE
        + _plan_upgrade("upgrade.own-call", "pro")
        + _plan_upgrade("upgrade.none", "free"),
        encoding="utf-8",
    )
    suite, _problems = check_file(path)
    assert suite is not None
    request = CallCheckRequest(suites=[SuiteToCheck(source=str(path), suite=suite)])
    found = {p.field: p.problem for p in check_calls(request, settings).problems}
    assert not [f for f in found if f.startswith("scenarios[0].")], found
    assert "'archive_task' is not a tool of workspace" in found["scenarios[1].expect[1].tool"]
    assert "scenarios[1].expect[2].tool" in found
