"""Validate reads a conversation as its turns say: each turn's `allowed_extra` tools must be
listed by its servers, and a `from_key` with `from_turn` is probed on the step of that earlier
turn, through the real workspace server."""

from __future__ import annotations

from pathlib import Path

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
