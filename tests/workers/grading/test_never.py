"""`never:` on a one-prompt scenario, and the load errors of the rules for calls that must
never happen: a forbidden call is `forbidden_call` whatever else the trial did right."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import Scenario, SpecError, ToolCallRecord, TurnResult
from mcp_farm.workers.grading.conversation import grade_conversation
from mcp_farm.workers.grading.grade import grade

SCHEMAS: dict[str, dict[str, Any]] = {
    "move": {"type": "object", "properties": {"path": {}, "to": {}}},
    "delete": {"type": "object", "properties": {"path": {}}},
}


def scenario(**fields: Any) -> Scenario:
    return Scenario.model_validate(
        {
            "id": "t",
            "version": 1,
            "tier": "simple",
            "prompt": "Tidy the sandbox.",
            "servers": ["s"],
            "expect": [{"tool": "move", "params": {"path": "/sandbox/a", "to": "/sandbox/b"}}],
            "allowed_extra": ["delete"],
        }
        | fields
    )


def call(i: int, tool: str, **arguments: Any) -> ToolCallRecord:
    return ToolCallRecord(index=i, server="s", tool=tool, arguments=arguments, ok=True)


MOVE = call(0, "move", path="/sandbox/a", to="/sandbox/b")
OUTSIDE = {"tool": "delete", "params": {"path": {"regex": "(?!/sandbox/).*"}}}


def test_a_call_never_names_is_a_forbidden_call_on_a_one_prompt_scenario() -> None:
    made = [MOVE, call(1, "delete", path="/home/notes")]
    outcome = grade(scenario(never=[OUTSIDE]), made, "Done.", "answer", SCHEMAS)
    assert outcome.outcome == "forbidden_call"
    assert "delete(path='/home/notes')" in outcome.detail


def test_a_call_outside_what_never_names_is_graded_as_usual() -> None:
    made = [MOVE, call(1, "delete", path="/sandbox/tmp")]
    assert grade(scenario(never=[OUTSIDE]), made, "Done.", "answer", SCHEMAS).outcome == "pass"


def test_without_never_the_same_calls_pass_as_before() -> None:
    made = [MOVE, call(1, "delete", path="/home/notes")]
    assert grade(scenario(), made, "Done.", "answer", SCHEMAS).outcome == "pass"


def _file(tmp_path: Path, **fields: Any) -> Path:
    body = {"id": "t.one", "version": 1, "tier": "simple", "servers": ["notes"]} | fields
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"suite": "mine", "scenarios": [body]}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("fields", "wanted"),
    [
        (
            {"prompt": "p", "expect": [], "confirm_destructive": True},
            "`confirm_destructive` needs a confirming user turn",
        ),
        (
            {"prompt": "p", "never": [{"tool": "x", "params": {"a": {"derived_from_step": 0}}}]},
            "never[0]: params.a: a `never` matcher cannot take a value",
        ),
        ({"prompt": "p", "never": [{"tol": "x"}]}, "never[0]"),
    ],
)
def test_a_wrong_never_rule_is_a_load_error_naming_file_and_field(
    tmp_path: Path, fields: dict[str, Any], wanted: str
) -> None:
    with pytest.raises(SpecError) as caught:
        load_suite(str(_file(tmp_path, **fields)))
    assert "mine.yaml" in str(caught.value)
    assert wanted in str(caught.value)


PAY: dict[str, dict[str, Any]] = SCHEMAS | {
    "pay": {"type": "object", "properties": {"amount": {"type": "number"}}},
    "count": {"type": "object", "properties": {"amount": {"type": "integer"}}},
}
FREE = {"tool": "pay", "params": {"amount": {"exact": 0}}}


def paying(**fields: Any) -> Scenario:
    return scenario(allowed_extra=["pay", "count"], **fields)


@pytest.mark.parametrize(
    ("tool", "amount", "forbidden"),
    [
        ("pay", 0, True),
        ("pay", 0.0, True),  # `number`: compared by value, as an expected step's are
        ("pay", 0.5, False),
        ("count", 0.0, False),  # `integer`: 0.0 is no integer
        ("count", 0, True),
    ],
)
def test_never_compares_numbers_as_the_tools_schema_types_them(
    tool: str, amount: float, forbidden: bool
) -> None:
    rule = FREE | {"tool": tool}
    made = [MOVE, call(1, tool, amount=amount)]
    outcome = grade(paying(never=[rule]), made, "Done.", "answer", PAY).outcome
    assert outcome == ("forbidden_call" if forbidden else "pass")


def test_a_turns_never_compares_numbers_as_the_tools_schema_types_them() -> None:
    convo = Scenario.model_validate(
        {
            "id": "c",
            "version": 1,
            "tier": "simple",
            "servers": ["s"],
            "turns": [
                {"user": "pay nothing", "expect": [], "allowed_extra": ["pay"], "never": [FREE]},
            ],
        }
    )
    turn = TurnResult(
        index=0,
        user="pay nothing",
        first_call=0,
        call_count=1,
        stop_reason="answer",
        outcome="pass",
        answer="paid",
    )
    _graded, verdict = grade_conversation(
        convo, [turn], [call(0, "pay", amount=0.0)], "answer", PAY
    )
    assert verdict.outcome == "forbidden_call"
