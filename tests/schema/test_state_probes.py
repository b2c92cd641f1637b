"""`state:` probes and `grade_by` load strictly: one kind per probe, SQL that can only read,
paths that stay in the sandbox, and `grade_by` that needs probes to grade by."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from mcp_farm.schema import Scenario, StateProbe

BASE: dict[str, Any] = {
    "id": "s",
    "version": 1,
    "tier": "simple",
    "prompt": "Add milk.",
    "servers": ["notes"],
}


def test_a_bare_expected_value_is_exact_and_the_default_grading_follows_the_probes() -> None:
    probe = StateProbe.model_validate({"snapshot": True, "at": "bookings", "expect": ["a"]})
    assert probe.kind == "snapshot" and probe.expect.exact == ["a"]
    assert Scenario.model_validate(BASE).grading == "calls"
    with_probe = Scenario.model_validate(BASE | {"state": [{"snapshot": True, "expect": 1}]})
    assert with_probe.grading == "both"


@pytest.mark.parametrize(
    ("probe", "says"),
    [
        ({"tool": "read_note", "snapshot": True, "expect": 1}, "exactly one of"),
        ({"expect": 1}, "exactly one of"),
        ({"sqlite": "a.db", "expect": 1}, "`sqlite` and `query` go together"),
        ({"sqlite": "a.db", "query": "DELETE FROM t", "expect": 1}, "one SELECT"),
        ({"sqlite": "a.db", "query": "SELECT 1; DROP TABLE t", "expect": 1}, "one SELECT"),
        ({"file": "../etc/passwd", "expect": 1}, "inside the sandbox"),
        ({"file": "/etc/passwd", "expect": 1}, "inside the sandbox"),
        ({"snapshot": True, "arguments": {"a": 1}, "expect": 1}, "for a `tool` probe"),
        ({"tool": "t", "expect": {"derived_from_step": 0}}, "cannot take a value from a step"),
    ],
)
def test_a_probe_that_cannot_be_run_as_written_is_refused_naming_why(
    probe: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValidationError, match=says):
        StateProbe.model_validate(probe)


def test_grading_by_state_without_a_probe_is_refused() -> None:
    with pytest.raises(ValidationError, match="needs `state:` probes"):
        Scenario.model_validate(BASE | {"grade_by": "state"})


def test_a_turn_takes_probes_of_its_own_and_the_scenario_collects_them() -> None:
    talk = BASE | {
        "prompt": None,
        "turns": [{"user": "hi", "state": [{"file": "a", "expect": None}]}],
    }
    scenario = Scenario.model_validate(talk)
    assert [p.kind for p in scenario.probes] == ["file"] and scenario.grading == "both"
