"""Validate finds the probes that could never look, without a model: a read-call probe whose
tool its server does not list, and a `sqlite:` or `file:` path the server's sandbox template
does not hold where nothing the scenario expects makes it (a folder on the way that is not
there, a name close to one that is)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp_farm.scenarios.tool_checks import ToolSchemas, tool_problems
from mcp_farm.scenarios.validate import check_file
from mcp_farm.schema import Suite


def _suite(state: list[dict[str, Any]], sandbox: str = "") -> dict[str, Any]:
    server: dict[str, Any] = {"name": "shop", "command": ["true"]}
    if sandbox:
        server["sandbox"] = sandbox
    return {
        "suite": "t",
        "servers": [server],
        "scenarios": [
            {
                "id": "t.add",
                "version": 1,
                "tier": "simple",
                "prompt": "Add Ada as a customer.",
                "servers": ["shop"],
                "expect": [
                    {
                        "tool": "write_file",
                        "params": {"path": "Documents/ada.txt"},
                        "example": {"path": "Documents/ada.txt", "text": "Ada"},
                    }
                ],
                "example_answer": "Added.",
                "state": state,
            }
        ],
    }


def _probe_problems(tmp_path: Path, state: list[dict[str, Any]]) -> list[str]:
    template = tmp_path / "template"
    (template / "Documents").mkdir(parents=True)
    (template / "orders.db").write_bytes(b"")
    (template / "Documents" / "credits.txt").write_text("x")
    path = tmp_path / "t.yaml"
    path.write_text(json.dumps(_suite(state, str(template))))
    _parsed, problems = check_file(path)
    return [f"{p.field}: {p.problem}" for p in problems if "state probe" in str(p)]


def test_a_sqlite_or_file_path_written_wrong_against_the_sandbox_template_is_named(
    tmp_path: Path,
) -> None:
    found = _probe_problems(
        tmp_path,
        [
            {"sqlite": "order.db", "query": "SELECT 1", "expect": [[1]], "label": "typo"},
            {"file": "Documnets/ada.txt", "expect": "Ada", "label": "folder typo"},
            {"file": "Documents/credit.txt", "expect": None, "label": "gone"},
        ],
    )
    assert len(found) == 3, found
    assert found[0].startswith("scenarios[0].state[0].sqlite: state probe typo:")
    assert "holds no 'order.db'" in found[0] and "did you mean 'orders.db'?" in found[0]
    assert "scenarios[0].state[1].file: state probe folder typo:" in found[1]
    assert "holds no 'Documnets'" in found[1] and "did you mean 'Documents'?" in found[1]
    assert "did you mean 'credits.txt'?" in found[2]


def test_paths_the_template_holds_or_the_scenario_makes_are_not_problems(
    tmp_path: Path,
) -> None:
    found = _probe_problems(
        tmp_path,
        [
            {"sqlite": "orders.db", "query": "SELECT 1", "expect": [[1]]},
            {"file": "Documents/ada.txt", "expect": "Ada"},  # the expected call writes it
            {"file": "Documents/credits.txt", "expect": None},  # moved away
            {"file": "backup.txt", "expect": None},  # must not be made; close to nothing there
            {"file": "graph.jsonl", "expect": {"regex": "Ada"}},  # the server makes it
        ],
    )
    assert found == []


def test_a_read_call_probe_whose_tool_the_server_does_not_list_is_named() -> None:
    suite = Suite.model_validate(
        _suite([{"tool": "read_customer", "arguments": {"name": "Ada"}, "expect": "Ada"}])
    )
    tools: ToolSchemas = {"shop": {"write_file": {}, "read_customers": {}}}
    found = tool_problems(suite, "t.yaml", tools)
    assert [(p.field, p.problem) for p in found] == [
        (
            "scenarios[0].state[0].tool",
            "state probe read_customer(name='Ada'): 'read_customer' is not a tool of shop; "
            "did you mean 'read_customers'?",
        )
    ]
    listed: ToolSchemas = {"shop": {"write_file": {}, "read_customer": {}}}
    assert tool_problems(suite, "t.yaml", listed) == []
