from __future__ import annotations

from typing import Any

import pytest

from mcp_farm.scenarios import load_suite
from mcp_farm.schema import (
    ParamMatcher,
    Scenario,
    ToolCallRecord,
)
from mcp_farm.workers.grading.chained import Chain
from mcp_farm.workers.grading.grade import grade
from mcp_farm.workers.grading.matchers import (
    check,
    normalize_path,
)
from mcp_farm.workers.model.decode import decode_text_reply


def m(spec: Any) -> ParamMatcher:
    return ParamMatcher.model_validate(spec)


@pytest.mark.parametrize(
    ("matcher", "value", "ok"),
    [
        ({"exact": 3}, 3, True),
        ({"exact": 3}, "3", False),
        ({"exact": True}, 1, False),
        ({"normalized": "Q1  Budget"}, "q1 budget", True),
        ({"regex": ".*budget.*"}, "the Budget", True),
        ({"regex": ".*budget.*"}, "costs", False),
        ({"one_of": ["a", "B"]}, "b", True),
        ({"one_of": ["a", "B"]}, "c", False),
        ({"number": 10, "tolerance": 0.5}, 10.4, True),
        ({"number": 10, "tolerance": 0.5}, 10.6, False),
        ({"number": 10}, True, False),
        ({"path": "Desktop"}, "~/Desktop/", True),
        ({"path": "Desktop"}, "/Documents/../Desktop", True),
        ({"path": "Desktop"}, "Documents", False),
        ({"any": True}, None, True),
        ({"json_schema": {"type": "integer", "minimum": 1}}, 0, False),
        ({"json_schema": {"type": "integer", "minimum": 1}}, 2, True),
    ],
)
def test_matchers(matcher: dict[str, Any], value: Any, ok: bool) -> None:
    assert (check(m(matcher), value) is None) is ok


def test_derived_matcher_looks_into_the_earlier_steps_result() -> None:
    source = ToolCallRecord(
        index=0,
        server="fs",
        tool="search_files",
        arguments={},
        ok=True,
        result_text="/Documents/budget-q1-2026.md",
    )
    chain = Chain({0: [source]})
    derived = m({"derived_from_step": 0})
    assert check(derived, "Documents/budget-q1-2026.md", chain) is None
    assert check(derived, "/Documents/other.md", chain) is not None
    assert "not done" in (check(derived, "x", Chain()) or "")
    # A URL is looked for as written (path normalisation would turn :// into :/).
    web = Chain(
        {0: [source.model_copy(update={"result_text": "1. https://docs.kestrel.test/faq"})]}
    )
    assert check(derived, "https://docs.kestrel.test/faq", web) is None
    assert check(derived, "https://docs.kestrel.test/install", web) is not None


def test_path_normalisation() -> None:
    assert normalize_path("~/") == "."
    assert normalize_path("./Downloads/a.txt") == "Downloads/a.txt"


CHAIN = next(s for s in load_suite("basic").scenarios if s.id == "fs.budget-total")
SCHEMAS = {
    "search_files": {
        "type": "object",
        "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
        "required": ["pattern"],
    },
    "read_file": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
    "list_directory": {"type": "object", "properties": {"path": {"type": "string"}}},
}


def call(
    i: int, tool: str, args: dict[str, Any], result: str = "", server: str | None = "fs"
) -> ToolCallRecord:
    return ToolCallRecord(
        index=i, server=server, tool=tool, arguments=args, ok=True, result_text=result
    )


def outcome(
    scenario: Scenario,
    calls: list[ToolCallRecord],
    answer: str | None = "46,550",
    stop: str = "answer",
) -> str:
    return grade(scenario, calls, answer, stop, SCHEMAS).outcome  # type: ignore[arg-type]


GOOD = [
    call(0, "search_files", {"pattern": "budget"}, "/Documents/budget-q1-2026.md"),
    call(1, "read_file", {"path": "/Documents/budget-q1-2026.md"}, "total 46,550"),
]


def test_the_ideal_chain_passes() -> None:
    assert outcome(CHAIN, GOOD) == "pass"


def test_outcomes_follow_the_taxonomy() -> None:
    assert outcome(CHAIN, GOOD, stop="infra_error") == "infra_error"
    assert outcome(CHAIN, GOOD, stop="time_limit") == "timeout"
    assert outcome(CHAIN, [], stop="format_error") == "format_error"
    assert outcome(CHAIN, []) == "no_tool_call"
    assert outcome(CHAIN, [*GOOD, call(2, "write_file", {})]) == "wrong_tool"
    assert outcome(CHAIN, [call(0, "made_up", {}, server=None)]) == "wrong_tool"
    assert outcome(CHAIN, [call(0, "list_directory", {"path": "/"})]) == "wrong_tool"
    wrong_value = [GOOD[0], call(1, "read_file", {"path": "/Documents/elsewhere.md"})]
    assert outcome(CHAIN, wrong_value) == "wrong_params"
    extra_arg = [GOOD[0], call(1, "read_file", {"path": "/Documents/budget-q1-2026.md", "x": 1})]
    assert outcome(CHAIN, extra_arg) == "wrong_params"
    assert outcome(CHAIN, [GOOD[0]]) == "wrong_sequence"
    assert (
        outcome(
            CHAIN,
            [
                call(0, "read_file", {"path": "/Documents/budget-q1-2026.md"}),
                call(1, "search_files", {"pattern": "budget"}, "/Documents/budget-q1-2026.md"),
            ],
        )
        == "wrong_sequence"
    )
    looped = [
        *GOOD,
        GOOD[1].model_copy(update={"index": 2}),
        GOOD[1].model_copy(update={"index": 3}),
    ]
    assert outcome(CHAIN, looped) == "tool_loop"
    assert outcome(CHAIN, GOOD, answer="I could not find it") == "output_mismatch"
    assert outcome(CHAIN, GOOD, answer=None, stop="turn_limit") == "output_mismatch"


def test_allowed_extra_calls_do_not_fail_a_trial() -> None:
    explore = call(0, "list_directory", {"path": "/"})
    shifted = [explore, *(c.model_copy(update={"index": c.index + 1}) for c in GOOD)]
    assert outcome(CHAIN, shifted) == "pass"


@pytest.mark.parametrize(
    ("text", "calls", "error"),
    [
        ('{"tool": "read_file", "arguments": {"path": "a"}}', 1, False),
        ('```json\n{"tool": "read_file", "arguments": {}}\n```', 1, False),
        ('{"answer": "hello"}', 0, False),
        ("plain words", 0, False),
        ("{'tool': 'read_file'}", 0, True),
        ('{"tool": "x", "arguments": "nope"}', 0, True),
        ('{"something": 1}', 0, True),
    ],
)
def test_json_in_text_decoding(text: str, calls: int, error: bool) -> None:
    reply = decode_text_reply(text, 0)
    assert len(reply.calls) == calls
    assert (reply.format_error is not None) is error


@pytest.mark.parametrize(
    ("matcher", "value", "ok"),
    [
        # A boolean is never a number, at any depth, in any matcher.
        ({"one_of": [1]}, True, False),
        ({"one_of": [0, 1]}, False, False),
        ({"exact": [1, 2]}, [True, 2], False),
        ({"exact": {"a": [1]}}, {"a": [True]}, False),
        ({"one_of": [[1, 2]]}, [True, 2], False),
        ({"items": {"one_of": [1, 2]}}, [1, True], False),
        ({"number": 1}, [True], False),
        # One of these integers, with the integer type held.
        ({"one_of": [5, 6]}, 5.0, False),
        ({"one_of": [5, 6]}, 5, True),
        ({"exact": [5]}, [5.0], False),
        ({"number": 5}, 5.0, True),
        # Strings are folded at any depth by one_of, as at the top.
        ({"one_of": [["Alpha", "b"]]}, ["alpha", "B"], True),
        ({"one_of": [{"k": "Alpha"}]}, {"k": "ALPHA "}, True),
        ({"one_of": [["Alpha"]]}, ["beta"], False),
        ({"items": {"normalized": "Q1 budget"}}, ["q1  BUDGET"], True),
        # exact stays exact.
        ({"exact": ["Alpha"]}, ["alpha"], False),
    ],
)
def test_types_are_held_at_every_depth(matcher: dict[str, Any], value: Any, ok: bool) -> None:
    assert (check(m(matcher), value) is None) is ok


@pytest.mark.parametrize(
    ("matcher", "typed", "sent", "graded"),
    [
        (5, "number", 5, "pass"),
        (5, "number", 5.0, "pass"),
        (0.0, "number", 0, "pass"),
        (5, "number", True, "wrong_params"),
        (5, "integer", 5, "pass"),
        (5, "integer", 5.0, "wrong_params"),
        (1, "integer", True, "wrong_params"),
        (5, "string", 5.0, "wrong_params"),
        ({"number": 5}, "integer", 5.0, "pass"),
        ({"number": 5}, "number", 5, "pass"),
    ],
)
def test_exact_compares_numbers_as_the_tools_schema_types_the_parameter(
    matcher: Any, typed: str, sent: Any, graded: str
) -> None:
    # README, Decisions: JSON does not tell 5 from 5.0, so a `number` parameter compares by
    # value; an `integer` one takes integers only; `number: 5` is the explicit form.
    scenario = Scenario.model_validate(
        {
            "id": "t.five",
            "version": 1,
            "tier": "simple",
            "prompt": "Rate it five.",
            "servers": ["s"],
            "expect": [{"tool": "rate", "params": {"stars": matcher}}],
        }
    )
    schemas = {"rate": {"type": "object", "properties": {"stars": {"type": typed}}}}
    calls = [call(0, "rate", {"stars": sent}, "rated")]
    assert grade(scenario, calls, "Rated.", "answer", schemas).outcome == graded


def _source(text: str) -> Chain:
    return Chain(
        {
            0: [
                ToolCallRecord(
                    index=0, server="s", tool="t", arguments={}, ok=True, result_text=text
                )
            ]
        }
    )


def test_chained_values_are_found_inside_json_string_leaves() -> None:
    derived = m({"derived_from_step": 0})
    note = _source('{"id": 7, "note": "Budget: 120000 EUR, for Lisbon.", "tags": ["x"]}')
    assert check(derived, 120000, note) is None
    assert check(derived, "Lisbon", note) is None
    assert check(derived, "Lisb", note) is not None  # still a whole value, bounded
    assert check(derived, 1200, note) is not None


def test_a_chained_value_can_say_which_value_it_is() -> None:
    bill = _source('{"lines": [{"amount": 40}, {"amount": 80}], "total": 120, "note": "sum 120"}')
    total = m({"derived_from_step": 0, "from_key": "total"})
    assert check(total, 120, bill) is None
    reason = check(total, 40, bill) or ""
    assert "'total'" in reason  # an addend does not pass for the sum
    assert check(m({"derived_from_step": 0}), 40, bill) is None  # it would, without from_key
    by_path = m({"derived_from_step": 0, "from_key": "lines[1].amount"})
    assert check(by_path, 80, bill) is None
    assert check(by_path, 40, bill) is not None
    assert check(m({"derived_from_step": 0, "from_key": "lines[5].amount"}), 40, bill)
    any_depth = m({"derived_from_step": 0, "from_key": "amount"})
    assert check(any_depth, 40, bill) is None
    text = _source("Subtotal: 40\nShipping: 80\nTotal: 120\n")
    captured = m({"derived_from_step": 0, "from_regex": r"Total: (\d+)"})
    assert check(captured, 120, text) is None
    assert check(captured, "120", text) is None
    assert "captures" in (check(captured, 40, text) or "")
    assert check(m({"derived_from_step": 0, "from_key": "total"}), 120, text) is not None


def test_selectors_go_only_with_a_chained_value() -> None:
    with pytest.raises(ValueError, match="only goes with `derived_from_step`"):
        m({"exact": 1, "from_key": "a"})
    with pytest.raises(ValueError, match="not both"):
        m({"derived_from_step": 0, "from_key": "a", "from_regex": "b"})
    with pytest.raises(ValueError, match=r"regular expression|regex"):
        m({"derived_from_step": 0, "from_regex": "(unclosed"})


def test_chained_values_and_from_key_also_read_a_results_structured_content() -> None:
    added = ToolCallRecord(
        index=0,
        server="s",
        tool="add_task",
        arguments={},
        ok=True,
        result_text="Added “Book the team dinner” to the board.",
        whole_json='{"structured": {"id": "t3", "title": "Book the team dinner"}}',
    )
    chain = Chain({0: [added]})
    assert check(m({"derived_from_step": 0, "from_key": "id"}), "t3", chain) is None
    assert check(m({"derived_from_step": 0}), "t3", chain) is None
    assert check(m({"derived_from_step": 0, "from_key": "id"}), "t4", chain) is not None
    # from_regex reads the text the model was shown, and the id is not in it.
    assert check(m({"derived_from_step": 0, "from_regex": "(t\\d+)"}), "t3", chain) is not None
