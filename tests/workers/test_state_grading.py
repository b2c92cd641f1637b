"""How calls and state make the outcome under each `grade_by`: wrong_state when the calls pass
and the state does not, other_path flagged beside the calls' outcome when the state passes and
the calls do not, and outcomes the state never overrules."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from mcp_farm.scheduler.view.trial_page import _state_html
from mcp_farm.schema import StateProbe
from mcp_farm.workers.state import combined, judged, rejudged

PROBE = StateProbe.model_validate(
    {"snapshot": True, "at": "bookings", "expect": ["Attic"], "label": "one booking"}
)


def _found(bookings: list[str]) -> object:
    return judged(PROBE, {"bookings": bookings}, None)


def test_calls_that_pass_with_a_doubled_effect_are_wrong_state_under_both() -> None:
    outcome, detail, verdict = combined("both", "pass", "", [_found(["Attic", "Attic"])])
    assert outcome == "wrong_state" and "one booking" in detail
    assert verdict is not None and verdict.calls_passed and not verdict.passed


def test_state_right_by_another_path_keeps_the_calls_outcome_and_is_flagged() -> None:
    outcome, _detail, verdict = combined("both", "wrong_tool", "no", [_found(["Attic"])])
    assert outcome == "wrong_tool"
    assert verdict is not None and verdict.other_path


def test_by_state_alone_the_probes_decide_except_a_forbidden_call_or_a_timeout() -> None:
    assert combined("state", "wrong_tool", "", [_found(["Attic"])])[0] == "pass"
    assert combined("state", "pass", "", [_found([])])[0] == "wrong_state"
    assert combined("state", "forbidden_call", "", [_found(["Attic"])])[0] == "forbidden_call"
    assert combined("state", "timeout", "", [_found([])])[0] == "timeout"


def test_a_prompt_that_did_not_fit_is_not_overruled_by_a_state_that_happens_to_fit() -> None:
    # The model was never asked: a world already as expected says nothing of it.
    for grade_by in ("state", "both"):
        assert combined(grade_by, "context_overflow", "", [_found(["Attic"])])[0] == (  # type: ignore[arg-type]
            "context_overflow"
        )


@pytest.mark.parametrize("grade_by", ["calls", "both", "state"])
def test_a_trial_without_probes_keeps_its_outcome_and_has_no_state_verdict(grade_by: str) -> None:
    assert combined(grade_by, "wrong_params", "x", []) == ("wrong_params", "x", None)  # type: ignore[arg-type]


def test_graded_by_calls_the_probes_are_recorded_but_decide_nothing() -> None:
    outcome, _d, verdict = combined("calls", "pass", "", [_found([])])
    assert outcome == "pass" and verdict is not None and not verdict.passed


def test_a_rescore_judges_the_recorded_finding_again_by_the_probe_as_now_written() -> None:
    stored = _found(["Attic", "Harbor"])
    assert not stored.passed
    looser = StateProbe.model_validate(
        {
            "snapshot": True,
            "at": "bookings",
            "expect": {"contains": "Attic"},
            "label": "one booking",
        }
    )
    assert rejudged(looser, stored).passed
    assert json.loads(stored.found) == {"bookings": ["Attic", "Harbor"]}


def test_the_trial_page_shows_each_probe_expected_and_found_escaped() -> None:
    hostile = judged(PROBE, {"bookings": ["<script>x</script>"]}, 0)
    _o, _d, verdict = combined("both", "pass", "", [hostile])
    assert verdict is not None
    page = _state_html(SimpleNamespace(state_json=verdict.model_dump_json()))
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "after turn 1" in page and "one booking" in page


def test_a_failure_after_the_last_turn_is_the_outcome_of_calls_that_passed() -> None:
    from mcp_farm.scenarios import load_suite
    from mcp_farm.workers.grading.grade import Graded
    from mcp_farm.workers.session import SessionState
    from mcp_farm.workers.stages.grade import after_grading

    probed = next(s for s in load_suite("state").scenarios if s.state)
    unrun = SessionState()  # the probes never ran
    passed = Graded("pass", "")
    assert after_grading(passed, "infra_error", "state probe x: refused", probed, unrun) == (
        Graded("infra_error", "state probe x: refused")
    )
    assert after_grading(passed, "harness_error", "Traceback", probed, unrun).outcome == (
        "harness_error"
    )
    ran_out = after_grading(passed, "time_limit", "", probed, unrun)
    assert ran_out.outcome == "timeout" and "before its state probes ran" in ran_out.detail
    # Calls that already failed keep their verdict; an answer that ended the trial changes nothing.
    failed = Graded("wrong_tool", "no")
    assert after_grading(failed, "infra_error", "x", probed, unrun) is failed
    assert after_grading(passed, "answer", "", probed, unrun) is passed


@pytest.mark.parametrize(
    ("expect", "found", "passed"),
    [
        (900, 900.0, True),  # a SQLite REAL column, a JSON document's 900.0
        ({"exact": {"total": 900}}, {"total": 900.0}, True),
        ({"keys": {"total": 900}}, {"total": 900.0}, True),
        ([1, 2], [1.0, 2], True),
        ({"one_of": [900, 1000]}, 1000.0, True),
        (900, 900.5, False),
        (1, True, False),  # a boolean is still never a number
        ("900", 900, False),
    ],
)
def test_a_probe_compares_numbers_by_value_at_any_depth(
    expect: object, found: object, passed: bool
) -> None:
    probe = StateProbe.model_validate({"snapshot": True, "expect": expect, "label": "total"})
    assert judged(probe, found, None).passed is passed
