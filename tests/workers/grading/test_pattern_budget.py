"""A pattern that backtracks past its time budget while a trial is graded or run ends the trial
as an infrastructure error naming the scenario (or server) and the field, within seconds."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mcp_farm.schema import (
    MATCH_BUDGET_S,
    ParamMatcher,
    PatternTimeout,
    ServerDef,
)
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.grading.chained import Chain
from mcp_farm.workers.grading.grade import grade
from mcp_farm.workers.grading.matchers import check
from mcp_farm.workers.grading.schemacheck import schema_error
from mcp_farm.workers.mcp.connections import Connected
from tests.workers.grading.test_matchers_and_grading import (
    CHAIN,
    GOOD,
    SCHEMAS,
    call,
)

# Each slips past the load-time check (no repeat inside a repeat) and still backtracks for
# longer than any sweep on a text that almost matches.
ALTERNATION = "(a|aa)+"
ALMOST = "a" * 4000 + "!"


def test_a_final_answer_past_its_budget_is_an_infra_error_naming_scenario_and_field() -> None:
    scenario = CHAIN.model_copy(update={"final_answer": f"{ALTERNATION}$"})
    with pytest.raises(InfraError) as caught:
        grade(scenario, GOOD, ALMOST, "answer", SCHEMAS)
    assert str(caught.value) == (
        f"cannot grade: scenario {CHAIN.id}: final_answer /(a|aa)+$/ ran past its {MATCH_BUDGET_S:g} s "
        "budget on 4,001 characters"
    )


def test_a_regex_matcher_past_its_budget_raises_pattern_timeout() -> None:
    matcher = ParamMatcher.model_validate({"regex": ALTERNATION})
    with pytest.raises(PatternTimeout, match=r"^regex /\(a\|aa\)\+/ ran past"):
        check(matcher, ALMOST)


def test_a_chained_from_regex_past_its_budget_raises_pattern_timeout() -> None:
    matcher = ParamMatcher.model_validate(
        {"derived_from_step": 0, "from_regex": f"Ref: ({ALTERNATION});"}
    )
    source = call(0, "search_files", {"pattern": "x"}, f"Ref: {ALMOST}")
    with pytest.raises(PatternTimeout, match=r"^from_regex "):
        check(matcher, "a", Chain({0: [source]}))


def test_a_schema_pattern_past_its_budget_is_an_infra_error_when_grading() -> None:
    schemas = SCHEMAS | {
        "read_file": {"type": "object", "properties": {"path": {"pattern": f"^{ALTERNATION}$"}}}
    }
    with pytest.raises(PatternTimeout):
        schema_error({"path": ALMOST}, schemas["read_file"])
    # Open tool use judges every call by its tool's schema (a server's).
    scenario = CHAIN.model_copy(update={"open_tools": True, "expect": []})
    calls = [call(0, "read_file", {"path": ALMOST}, "total 46,550")]
    with pytest.raises(
        InfraError, match=f"^cannot grade: scenario {CHAIN.id}: JSON schema pattern "
    ):
        grade(scenario, calls, "46,550", "answer", schemas)


def test_an_error_pattern_past_its_budget_is_an_infra_error_naming_the_server() -> None:
    server = ServerDef.model_validate(
        {"name": "db", "command": ["db"], "error_pattern": f"^{ALTERNATION}$"}
    )
    conn = Connected(sessions={}, tools={}, servers={"db": server})
    assert conn.reported_error("db", "aaa") and not conn.reported_error("db", "ok")
    with pytest.raises(InfraError, match=r"^server db: error_pattern /\^\(a\|aa\)\+\$/ ran"):
        conn.reported_error("db", ALMOST)


CHECK_IN_A_PROCESS = """
import json, sys
from mcp_farm.workers.grading.schemacheck import schema_error
try:
    schema_error(json.loads(sys.argv[1]), json.loads(sys.argv[2]))
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def _checked_apart(value: object, schema: object) -> str:
    """`schema_error` in a process of its own, killed if it outlives the limit: `re` holds
    the interpreter while it backtracks, so no thread could time it out."""
    done = subprocess.run(
        [sys.executable, "-c", CHECK_IN_A_PROCESS, json.dumps(value), json.dumps(schema)],
        capture_output=True,
        text=True,
        timeout=MATCH_BUDGET_S + 60,
        check=True,
    )
    return done.stdout


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        # The argument's keys come from the model: each name is matched against the pattern.
        (
            {"type": "object", "patternProperties": {f"^{ALTERNATION}$": {"type": "string"}}},
            {"a" * 60 + "!": "x"},
        ),
        (
            {
                "type": "object",
                "patternProperties": {f"^{ALTERNATION}$": {}},
                "additionalProperties": False,
            },
            {"a" * 60 + "!": "x"},
        ),
    ],
)
def test_a_schemas_property_name_patterns_are_matched_within_the_budget(
    schema: dict[str, object], value: dict[str, object]
) -> None:
    said = _checked_apart(value, schema)  # raises TimeoutExpired if the match runs on
    assert said.startswith("PatternTimeout JSON schema patternProperties /^(a|aa)+$/"), said


def test_property_name_patterns_judge_as_jsonschema_does() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "patternProperties": {"^x-": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert schema_error({"name": "a", "x-count": 2}, schema) is None
    wrong = schema_error({"x-count": "two"}, schema)
    assert wrong is not None and wrong.message == "'two' is not of type 'integer'"
    extra = schema_error({"name": "a", "other": 1}, schema)
    assert extra is not None
    assert extra.message == "'other' does not match any of the regexes: '^x-'"
    plain = schema_error({"other": 1}, {"type": "object", "additionalProperties": False})
    assert plain is not None
    assert plain.message == "Additional properties are not allowed ('other' was unexpected)"
