"""Grading steps: alternative tools, partial orders, optional arguments, calls that failed."""

from __future__ import annotations

from typing import Any

from mcp_farm.schema import (
    Scenario,
    ToolCallRecord,
    order_problems,
)
from mcp_farm.workers.grading.grade import grade

SCHEMAS: dict[str, dict[str, Any]] = {
    name: {"type": "object", "properties": {"id": {}, "q": {}, "path": {}, "dry": {}}}
    for name in ("search", "read", "read_text", "write", "list")
}


def scenario(*steps: dict[str, Any], order: str = "ordered") -> Scenario:
    return Scenario.model_validate(
        {
            "id": "t",
            "version": 1,
            "tier": "simple",
            "prompt": "p",
            "servers": ["s"],
            "expect": list(steps),
            "order": order,
            "allowed_extra": ["list"],
        }
    )


def call(i: int, tool: str, result: str = "", ok: bool = True, **arguments: Any) -> ToolCallRecord:
    return ToolCallRecord(
        index=i,
        server="s",
        tool=tool,
        arguments=arguments,
        ok=ok,
        error=None if ok else result,
        result_text=result,
    )


def verdict(s: Scenario, calls: list[ToolCallRecord]) -> tuple[str, str]:
    v = grade(s, calls, "done", "answer", SCHEMAS)
    return v.outcome, v.detail


# search first; then two reads, each needing the search but not each other.
FORK = scenario(
    {"tool": "search", "params": {"q": "x"}},
    {"tool": "read", "params": {"id": {"derived_from_step": 0}}},
    {"tool": "read", "params": {"id": {"derived_from_step": 0}}, "after": [0]},
)
HITS = "a-1\nb-2"


def test_steps_that_follow_a_common_step_may_come_in_either_order() -> None:
    both = [call(0, "search", HITS, q="x"), call(1, "read", id="a-1"), call(2, "read", id="b-2")]
    assert verdict(FORK, both)[0] == "pass"
    swapped = [
        both[0],
        both[2].model_copy(update={"index": 1}),
        both[1].model_copy(update={"index": 2}),
    ]
    assert verdict(FORK, swapped)[0] == "pass"


def test_a_step_before_the_step_it_follows_is_a_wrong_sequence() -> None:
    s = scenario(
        {"tool": "search", "params": {"q": "x"}},
        {"tool": "read", "params": {"id": "a-1"}},
        {"tool": "read", "params": {"id": "b-2"}, "after": [0]},
    )
    early = [call(0, "read", id="b-2"), call(1, "search", HITS, q="x"), call(2, "read", id="a-1")]
    outcome, detail = verdict(s, early)
    assert outcome == "wrong_sequence"
    assert "step 2 (read) came before step 0 (search)" in detail


def test_every_step_needs_a_call_of_its_own() -> None:
    one_read = [call(0, "search", HITS, q="x"), call(1, "read", id="a-1")]
    outcome, detail = verdict(FORK, one_read)
    assert outcome == "wrong_sequence" and "of its own" in detail


def test_a_chained_value_used_before_its_source_came_back_is_a_wrong_sequence() -> None:
    guessed = [call(0, "read", id="a-1"), call(1, "search", HITS, q="x"), call(2, "read", id="b-2")]
    outcome, detail = verdict(FORK, guessed)
    assert outcome == "wrong_sequence"
    assert "before the step it comes from" in detail


def test_unordered_steps_may_come_in_any_order_but_each_needs_its_own_call() -> None:
    s = scenario(
        {"tool": "read", "params": {"id": {"regex": "a-.*"}}},
        {"tool": "read", "params": {"id": {"regex": ".*-1"}}},
        order="unordered",
    )
    assert verdict(s, [call(0, "read", id="b-1"), call(1, "read", id="a-2")])[0] == "pass"
    # One call fits both steps, the other fits only the first: the search finds the pairing.
    assert verdict(s, [call(0, "read", id="a-1"), call(1, "read", id="a-2")])[0] == "pass"
    assert verdict(s, [call(0, "read", id="a-1")])[0] == "wrong_sequence"


def test_any_of_the_alternative_tools_does_the_step_and_its_params_are_judged() -> None:
    s = scenario({"tool": {"one_of": ["read_text", "read"]}, "params": {"path": {"path": "a.md"}}})
    assert verdict(s, [call(0, "read", path="/a.md")])[0] == "pass"
    assert verdict(s, [call(0, "read_text", path="a.md")])[0] == "pass"
    assert verdict(s, [call(0, "read_text", path="b.md")])[0] == "wrong_params"
    outcome, detail = verdict(s, [call(0, "write", path="a.md")])
    assert outcome == "wrong_tool" and "read_text|read" in detail


def test_an_optional_argument_may_be_left_out_but_not_given_wrong() -> None:
    s = scenario({"tool": "write", "params": {"path": "a", "dry": {"optional": False}}})
    assert verdict(s, [call(0, "write", path="a")])[0] == "pass"
    assert verdict(s, [call(0, "write", path="a", dry=False)])[0] == "pass"
    assert verdict(s, [call(0, "write", path="a", dry=True)])[0] == "wrong_params"


def test_an_argument_the_step_declares_is_never_extra_even_if_the_schema_omits_it() -> None:
    s = scenario({"tool": "write", "params": {"path": "a", "mode": {"optional": "fast"}}})
    assert verdict(s, [call(0, "write", path="a", mode="fast")])[0] == "pass"
    assert verdict(s, [call(0, "write", path="a", other=1)])[0] == "wrong_params"


def test_a_call_that_returned_an_error_does_not_do_its_step() -> None:
    s = scenario({"tool": "read", "params": {"id": "a-1"}})
    outcome, detail = verdict(s, [call(0, "read", "no such id", ok=False, id="a-1")])
    assert outcome == "wrong_params" and "returned an error" in detail
    retried = [call(0, "read", "no such id", ok=False, id="a-1"), call(1, "read", "ok", id="a-1")]
    assert verdict(s, retried)[0] == "pass"


def test_a_step_that_expects_an_error_is_done_only_by_a_call_that_failed() -> None:
    s = scenario({"tool": "read", "params": {"id": "gone"}, "expect_error": True})
    assert verdict(s, [call(0, "read", "no such id", ok=False, id="gone")])[0] == "pass"
    outcome, detail = verdict(s, [call(0, "read", "text", id="gone")])
    assert outcome == "wrong_params" and "expected to fail" in detail


def test_a_missing_step_outranks_the_error_it_caused() -> None:
    s = scenario(
        {"tool": "write", "params": {"path": "dir"}},
        {"tool": "read", "params": {"path": "dir/a"}},
    )
    skipped = [call(0, "read", "no such folder", ok=False, path="dir/a")]
    outcome, detail = verdict(s, skipped)
    assert outcome == "wrong_sequence" and "step 0 (write) never called" in detail


def test_a_failed_source_step_is_reported_as_the_failure_not_as_a_broken_chain() -> None:
    failed = [call(0, "search", "index offline", ok=False, q="x"), call(1, "read", id="a-1")]
    outcome, detail = verdict(FORK, failed)
    assert outcome == "wrong_params" and "returned an error" in detail


def test_a_wrong_argument_outranks_a_missing_step() -> None:
    outcome, _ = verdict(FORK, [call(0, "search", HITS, q="y")])
    assert outcome == "wrong_params"


def test_each_alternative_tool_may_carry_its_own_arguments() -> None:
    schemas = {
        "get_by_id": {"type": "object", "properties": {"id": {}}},
        "search": {"type": "object", "properties": {"q": {}, "limit": {}}},
    }
    s = scenario(
        {
            "tool": {
                "one_of": [
                    {"name": "get_by_id", "params": {"id": "a-1"}},
                    {"name": "search", "params": {"q": {"regex": ".*a-1.*"}}},
                ]
            }
        }
    )

    def graded(c: ToolCallRecord) -> tuple[str, str]:
        v = grade(s, [c], "done", "answer", schemas)
        return v.outcome, v.detail

    assert graded(call(0, "get_by_id", id="a-1"))[0] == "pass"
    assert graded(call(0, "search", q="find a-1"))[0] == "pass"
    # An argument declared for one alternative is not accepted on the other.
    outcome, detail = graded(call(0, "search", id="a-1"))
    assert outcome == "wrong_params" and "missing argument 'q'" in detail
    outcome, detail = graded(call(0, "search", q="a-1", id="a-1"))
    assert outcome == "wrong_params" and "unexpected argument(s) id" in detail


def test_a_shared_block_holds_each_alternative_to_its_own_schema() -> None:
    schemas = {
        "read": {"type": "object", "properties": {"path": {}}},
        "read_text": {"type": "object", "properties": {"path": {}, "encoding": {}}},
    }
    s = scenario(
        {
            "tool": {"one_of": ["read_text", "read"]},
            "params": {"path": {"path": "a.md"}, "encoding": {"optional": "utf-8"}},
        }
    )
    ok = grade(s, [call(0, "read_text", path="a.md", encoding="utf-8")], "d", "answer", schemas)
    assert ok.outcome == "pass"
    wrong = grade(s, [call(0, "read", path="a.md", encoding="utf-8")], "d", "answer", schemas)
    assert wrong.outcome == "wrong_params" and "unexpected argument(s) encoding" in wrong.detail


def test_an_alternatives_own_chained_values_are_checked_for_order() -> None:
    s = scenario(
        {"tool": {"one_of": ["a", {"name": "b", "params": {"x": {"derived_from_step": 0}}}]}}
    )
    assert s.expect[0].sources() == {0}
    problems = list(order_problems(s.expect))
    assert problems[0][0] == "expect[0].tool.one_of[1].params.x.derived_from_step"


def test_a_failure_names_the_call_judged_against_the_failing_step() -> None:
    s = scenario(
        {"tool": "write", "params": {"path": "a.md"}},
        {"tool": "write", "params": {"path": "b.md"}},
        order="unordered",
    )
    # The call for a.md meets step 0; the wrong call is the one that blames step 1.
    outcome, detail = verdict(s, [call(0, "write", path="a.md"), call(1, "write", path="c.md")])
    assert outcome == "wrong_params"
    assert "c.md" in detail and "a.md" not in detail


def test_a_call_on_another_server_is_named_as_such() -> None:
    s = scenario({"tool": "read", "server": "s", "params": {"id": "a-1"}})
    other = call(0, "read", id="a-1").model_copy(update={"server": "mirror"})
    outcome, detail = verdict(s, [other])
    assert outcome == "wrong_sequence"
    assert "called on mirror, not on s" in detail


def test_strict_calls_refuse_a_wrong_call_before_or_after_the_right_one() -> None:
    lenient = scenario({"tool": "read", "params": {"id": "a-1"}})
    strict = lenient.model_copy(update={"calls": "strict"})
    before = [call(0, "read", id="a-9"), call(1, "read", id="a-1")]
    after = [call(0, "read", id="a-1"), call(1, "read", id="a-9")]
    for calls in (before, after):
        graded = grade(lenient, calls, "done", "answer", SCHEMAS)
        assert graded.outcome == "pass" and not graded.first_try
        outcome, detail = verdict(strict, calls)
        assert outcome == "wrong_params" and "matches no step" in detail
    # A call that was meant to fail does its step, so it is no extra call.
    coping = scenario(
        {"tool": "read", "params": {"id": "gone"}, "expect_error": True},
        {"tool": "read", "params": {"id": "a-1"}},
    ).model_copy(update={"calls": "strict"})
    calls = [call(0, "read", "no such id", ok=False, id="gone"), call(1, "read", id="a-1")]
    graded = grade(coping, calls, "done", "answer", SCHEMAS)
    assert graded.outcome == "pass" and graded.first_try
    # An exact repeat is a tool loop at once; an allowed extra tool is still free.
    twice = [call(0, "read", id="a-1"), call(1, "read", id="a-1")]
    assert verdict(strict, twice)[0] == "tool_loop"
    looked = [call(0, "list"), call(1, "read", id="a-1")]
    assert grade(strict, looked, "done", "answer", SCHEMAS).first_try


def test_calls_strict_is_a_scenario_field() -> None:
    s = Scenario.model_validate(
        {"id": "t", "version": 1, "tier": "simple", "prompt": "p", "servers": ["s"]}
        | {"calls": "strict"}
    )
    assert s.calls == "strict"


def test_a_step_that_expects_an_error_is_met_by_a_call_the_input_schema_refuses() -> None:
    # Issue 36, item 19: an expected failing call that misses the tool's enum could never pass,
    # for any agent: its schema problem was held against it before its error counted.
    s = scenario(
        {"tool": "read", "params": {"id": "gone", "mode": "fastest"}, "expect_error": True},
        {"tool": "read", "params": {"id": "gone", "mode": "fast"}},
    )
    schemas = {
        "read": {
            "type": "object",
            "properties": {"id": {}, "mode": {"enum": ["fast", "slow"]}},
        }
    }
    refused = call(0, "read", "mode: 'fastest' is not one of", ok=False, id="gone", mode="fastest")
    fixed = call(1, "read", "ok", id="gone", mode="fast")
    graded = grade(s, [refused, fixed], "done", "answer", schemas)
    assert graded.outcome == "pass", graded.detail
    # A call that worked although it breaks the schema is still the model's wrong call.
    worked = call(0, "read", "text", id="gone", mode="fastest")
    assert grade(s, [worked, fixed], "done", "answer", schemas).outcome == "wrong_params"
