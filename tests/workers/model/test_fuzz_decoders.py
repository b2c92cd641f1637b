"""Whatever a model writes, every decoder ends in a classified ModelReply, never an exception.

Example tests name each crash that was found; property tests feed each decoder arbitrary
text, arbitrary JSON, deep nesting and OpenAI-shaped messages with wrong types everywhere.
"""

from __future__ import annotations

import json
import math
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_farm.scenarios import (
    load_prompt,
    load_suite,
)
from mcp_farm.schema import (
    ParamMatcher,
    ToolCallRecord,
)
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.grading.chained import Chain
from mcp_farm.workers.grading.grade import grade
from mcp_farm.workers.grading.matchers import check
from mcp_farm.workers.mcp.connections import Connected
from mcp_farm.workers.model.decode import (
    decode_arguments,
    decode_text_reply,
)
from mcp_farm.workers.model.local import LocalClient
from mcp_farm.workers.model.openai import (
    OpenAIClient,
    completion,
)
from mcp_farm.workers.model.safejson import (
    arguments_key,
    as_json_text,
    wire_problem,
)
from mcp_farm.workers.model.scripted import scripted_reply
from mcp_farm.workers.model.toolspec import (
    ModelReply,
    ParsedCall,
    ToolSpec,
)
from mcp_farm.workers.session import execute

FUZZ = settings(
    max_examples=1000,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
NATIVE = load_prompt("native")
JSON_MODE = load_prompt("json")
CHAIN = next(s for s in load_suite("basic").scenarios if s.id == "fs.budget-total")

# Characters that broke storage or encoding before: NUL and both kinds of lone surrogate.
ODD_CHARS = st.sampled_from(["\x00", "\ud800", "\udfff", "\ufffd", "\\", '"', "{", "["])
TEXT = st.text(alphabet=st.one_of(st.characters(), ODD_CHARS), max_size=60)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)
# Python values no JSON decoder returns, but an adapter (or a hand-written script) could.
ODD_VALUES = st.one_of(
    JSON_VALUES,
    st.binary(max_size=8),
    st.sets(st.integers(), max_size=3),
    # Built, not `just`: hypothesis writes a strategy's repr, and a 5,000-digit int has none.
    st.builds(lambda: 10**5000),
    st.dictionaries(st.integers(), JSON_VALUES, max_size=3),
    st.tuples(JSON_VALUES, JSON_VALUES),
)


def _nested(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    if kind == "open":
        return "[" * depth
    return '{"a":' * depth + "1" + "}" * depth


def _assert_classified(reply: Any) -> None:
    """A usable reply: calls with text names and plain-JSON arguments, or an answer, or a
    format error with text kept for the transcript."""
    assert isinstance(reply, ModelReply)
    assert isinstance(reply.text, str)
    if reply.format_error is not None:
        assert isinstance(reply.format_error, str) and reply.format_error
        assert not reply.calls
        return
    for call in reply.calls:
        assert isinstance(call.name, str) and call.name
        assert isinstance(call.call_id, str) and call.call_id
        assert isinstance(call.arguments, dict)
        assert wire_problem(call.arguments) is None


# --- the crashes found, one sentence each ---------------------------------------------------


@pytest.mark.parametrize("kind", ["list", "open", "object"])
def test_deeply_nested_json_reply_is_a_format_error(kind: str) -> None:
    text = _nested(100_000, kind)
    reply = decode_text_reply("{" + text if kind != "object" else text, 0)
    assert reply.format_error and "nested deeper" in reply.format_error
    native = LocalClient._decode_native(text, 0)
    assert native.format_error is not None and native.text == text


def test_deeply_nested_tool_arguments_are_a_format_error() -> None:
    nested = '{"tool": "read_file", "arguments": ' + _nested(5000, "object") + "}"
    assert decode_text_reply(nested, 0).format_error is not None
    problem = decode_arguments(_nested(5000, "object"), "read_file")
    assert isinstance(problem, str) and "nested deeper" in problem


def test_an_integer_past_pythons_digit_limit_is_a_format_error() -> None:
    reply = decode_text_reply('{"tool": "x", "arguments": {"n": ' + "9" * 5000 + "}}", 0)
    assert reply.format_error is not None and not reply.calls


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_standard_numbers_in_arguments_are_a_format_error(constant: str) -> None:
    reply = decode_text_reply('{"tool": "x", "arguments": {"n": ' + constant + "}}", 0)
    assert reply.format_error is not None and not reply.calls


def test_a_lone_surrogate_in_arguments_is_a_format_error_not_an_encoding_crash() -> None:
    reply = decode_text_reply('{"tool": "x", "arguments": {"path": "\\ud800"}}', 0)
    assert reply.format_error is not None and "surrogate" in reply.format_error


def test_a_lone_surrogate_in_an_answer_is_kept_as_the_answer() -> None:
    reply = decode_text_reply('{"answer": "half \\ud800 a pair"}', 0)
    assert reply.format_error is None and reply.text == "half \ud800 a pair"


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ({"content": None, "tool_calls": [{"function": {"name": ["x"]}}]}, "tool name is a list"),
        ({"content": None, "tool_calls": {"function": {"name": "x"}}}, "`tool_calls` is a dict"),
        ({"content": None, "tool_calls": "read_file"}, "`tool_calls` is a str"),
        ({"content": 42}, "content is a int"),
        ({"content": None, "tool_calls": [{"function": "read_file"}]}, "without a `function`"),
        ({"content": None, "tool_calls": [None]}, "a tool call is a NoneType"),
        ({"tool_calls": [{"function": {"name": "x", "arguments": [1]}}]}, "are a list"),
        ({"tool_calls": [{"function": {"name": "x", "arguments": 3.5}}]}, "are a float"),
        ({"tool_calls": [{"function": {"name": "x", "arguments": "[1]"}}]}, "not a JSON object"),
        ("not a message", "message is not an object"),
    ],
)
def test_openai_messages_with_wrong_types_are_format_errors(message: Any, problem: str) -> None:
    reply = OpenAIClient._decode(message, NATIVE, 0)
    assert reply.format_error is not None and problem in reply.format_error
    # The transcript keeps what came: the message itself, as JSON.
    assert reply.text and not reply.calls


def test_an_openai_call_id_of_the_wrong_type_is_replaced_not_fatal() -> None:
    message = {"tool_calls": [{"id": 7, "function": {"name": "read_file", "arguments": "{}"}}]}
    reply = OpenAIClient._decode(message, NATIVE, 3)
    assert reply.format_error is None
    assert reply.calls == [ParsedCall("call_3_0", "read_file", {})]


def test_openai_content_given_as_text_parts_is_read_as_text() -> None:
    reply = OpenAIClient._decode({"content": [{"type": "text", "text": "hi"}]}, NATIVE, 0)
    assert reply.format_error is None and reply.text == "hi"


@pytest.mark.parametrize(
    "body",
    [
        "<html><body>502 Bad Gateway</body></html>",
        "",
        '{"error": {"message": "model not loaded"}}',
        '{"choices": []}',
        '{"choices": {"message": {}}}',
        '{"choices": [{"text": "legacy completion"}]}',
        "[" * 100_000,
    ],
)
def test_a_200_body_that_is_no_chat_completion_is_an_infrastructure_error(body: str) -> None:
    with pytest.raises(InfraError, match="answered"):
        completion(body, "http://endpoint/v1/chat/completions")


def test_a_completion_whose_message_holds_junk_is_the_models_format_error() -> None:
    data = completion('{"choices": [{"message": {"content": 7}}]}', "http://e/v1")
    reply = OpenAIClient._decode(data["choices"][0]["message"], NATIVE, 0)
    assert reply.format_error == "the content is a int, not text"


def test_a_server_writing_nan_in_its_own_statistics_is_still_a_completion() -> None:
    body = '{"choices": [{"message": {"content": "ok"}}], "timings": {"per_s": NaN}}'
    assert completion(body, "http://e/v1")["timings"]["per_s"] != 0


@pytest.mark.parametrize(
    ("item", "mode"),
    [
        ({"call": "read_file"}, "native"),
        ({"call": {"name": ["x"], "arguments": {}}}, "native"),
        ({"call": {"name": "x", "arguments": {1: "a"}}}, "native"),
        ({"call": {"name": "x", "arguments": {"s": {1, 2}}}}, "native"),
        ({"call": {"name": "x", "arguments": {"s": {1, 2}}}}, "json"),
        ({"nothing": 1}, "native"),
    ],
)
def test_malformed_script_items_are_format_errors(item: dict[str, Any], mode: str) -> None:
    reply = scripted_reply(item, 0, mode)
    assert reply.format_error is not None and not reply.calls


def test_a_call_with_arguments_that_cannot_be_sent_is_recorded_as_failed() -> None:
    tool = ToolSpec("read_file", "filesystem", "read_file", "", {"type": "object"})
    conn = Connected(sessions={}, tools={"read_file": tool})
    # No decoder lets such a call through; an adapter from elsewhere might. No session is
    # attached: reaching the server would fail the test with a KeyError.
    odd: dict[Any, Any] = {"path": "\ud800", 1: float("nan")}
    record = anyio.run(execute, ParsedCall("c", "read_file", odd), 0, conn)
    assert not record.ok and record.error and record.error.startswith("arguments not sent")
    unknown = anyio.run(execute, ParsedCall("c", "nope\x00", {2: "x"}), 1, conn)  # type: ignore[dict-item]
    assert unknown.server is None and not unknown.ok


def test_grading_weird_but_decoded_values_does_not_raise() -> None:
    odd: dict[str, Any] = {
        "pattern": "\ud800" * 3,
        "path": "x" * 100_000,
        "n": float("nan"),
        "deep": json.loads(_nested(30, "object")),
    }
    calls = [
        ToolCallRecord(index=i, server="filesystem", tool=t, arguments=odd, ok=True)
        for i, t in enumerate(["search_files", "read_file", "read_file"])
    ]
    verdict = grade(CHAIN, calls, "total \x00 \udfff", "answer", {"read_file": {"type": "object"}})
    assert verdict.outcome in ("wrong_params", "wrong_sequence", "output_mismatch", "tool_loop")


def test_a_number_matcher_given_an_integer_too_large_for_a_float_says_no() -> None:
    matcher = ParamMatcher.model_validate({"number": 3, "tolerance": 1})
    assert check(matcher, 10**400) is not None


# --- properties: no exception escapes, whatever comes in ------------------------------------


@FUZZ
@given(st.one_of(TEXT, st.text(max_size=300)))
def test_any_text_decodes_to_a_classified_reply(text: str) -> None:
    for reply in (decode_text_reply(text, 0), LocalClient._decode_native(text, 0)):
        _assert_classified(reply)
    for prompt in (NATIVE, JSON_MODE):
        _assert_classified(OpenAIClient._decode({"content": text}, prompt, 0))


@FUZZ
@given(JSON_VALUES, st.sampled_from(["raw", "call", "answer", "native", "fenced"]))
def test_any_json_value_decodes_to_a_classified_reply(value: Any, shape: str) -> None:
    wrapped: Any = {
        "raw": value,
        "call": {"tool": "read_file", "arguments": value},
        "answer": {"answer": value},
        "native": {"tool_call": {"name": value, "arguments": value}},
        "fenced": {"tool": value, "parameters": value},
    }[shape]
    text = json.dumps(wrapped)  # NaN and Infinity are written as such: decoders must refuse
    if shape == "fenced":
        text = f"```json\n{text}\n```"
    _assert_classified(decode_text_reply(text, 1))
    _assert_classified(LocalClient._decode_native(text, 1))
    result = decode_arguments(text, "read_file")
    assert isinstance(result, str) or wire_problem(result) is None
    assert isinstance(decode_arguments(value, "read_file"), dict | str)


@FUZZ
@given(st.integers(1, 50_000), st.sampled_from(["list", "open", "object"]), TEXT)
def test_any_nesting_depth_decodes_to_a_classified_reply(depth: int, kind: str, tail: str) -> None:
    text = _nested(depth, kind) + tail
    for candidate in (text, '{"tool": "x", "arguments": ' + text + "}"):
        _assert_classified(decode_text_reply(candidate, 0))
        _assert_classified(LocalClient._decode_native(candidate, 0))
        assert isinstance(decode_arguments(candidate, "x"), dict | str)


def _anything() -> st.SearchStrategy[Any]:
    return st.one_of(ODD_VALUES, st.text(max_size=30))


FUNCTIONS = st.one_of(
    _anything(),
    st.fixed_dictionaries(
        {},
        optional={
            "name": st.one_of(st.sampled_from(["read_file", "", "x" * 5000]), _anything()),
            "arguments": st.one_of(JSON_VALUES.map(json.dumps), _anything(), st.just('{"a": NaN}')),
        },
    ),
)
TOOL_CALLS = st.fixed_dictionaries(
    {},
    optional={"id": _anything(), "type": _anything(), "function": FUNCTIONS},
)
MESSAGES = st.one_of(
    _anything(),
    st.fixed_dictionaries(
        {},
        optional={
            "role": _anything(),
            "content": st.one_of(
                _anything(), st.lists(st.fixed_dictionaries({"text": _anything()}), max_size=2)
            ),
            "tool_calls": st.one_of(_anything(), st.lists(st.one_of(TOOL_CALLS, _anything()))),
        },
    ),
)


@FUZZ
@given(MESSAGES, st.sampled_from(["native", "json"]))
def test_any_openai_message_decodes_to_a_classified_reply(message: Any, mode: str) -> None:
    _assert_classified(OpenAIClient._decode(message, NATIVE if mode == "native" else JSON_MODE, 0))


@FUZZ
@given(
    st.one_of(MESSAGES, st.lists(MESSAGES, max_size=2)), st.sampled_from(["wrap", "bare", "text"])
)
def test_any_response_body_is_a_completion_or_an_infrastructure_error(
    choices: Any, shape: str
) -> None:
    shaped = {"choices": [{"message": choices}], "usage": choices} if shape == "wrap" else choices
    body = as_json_text(shaped) if shape != "text" or not isinstance(choices, str) else choices
    try:
        data = completion(body, "http://e/v1")
    except InfraError:
        return
    _assert_classified(OpenAIClient._decode(data["choices"][0]["message"], NATIVE, 0))


SCRIPT_ITEMS = st.dictionaries(
    st.sampled_from(["call", "answer", "text", "other"]),
    st.one_of(
        _anything(),
        st.fixed_dictionaries({}, optional={"name": _anything(), "arguments": _anything()}),
    ),
    max_size=3,
)


@FUZZ
@given(SCRIPT_ITEMS, st.sampled_from(["native", "json", "grammar"]))
def test_any_script_item_decodes_to_a_classified_reply(item: dict[str, Any], mode: str) -> None:
    _assert_classified(scripted_reply(item, 0, mode))


# Validated once, outside the strategy: a first model_validate can import modules that touch
# the global random state, which hypothesis then reports as a flaky strategy.
MATCHERS = st.sampled_from(
    [
        ParamMatcher.model_validate(each)
        for each in (
            {"exact": "a"},
            {"normalized": "A b"},
            {"regex": "a.*"},
            {"one_of": ["a", 1]},
            {"number": 2, "tolerance": 0.5},
            {"path": "Desktop"},
            {"any": True},
            {"json_schema": {"type": "object", "properties": {"a": {"type": "string"}}}},
            {"optional": False},
            {"items": {"derived_from_step": 0}},
            {"items": ["a", {"number": 1}], "contains": {"regex": "a.*"}},
            {"contains": [{"derived_from_step": 0}, {"any": True}]},
            {"keys": {"a": {"optional": {"derived_from_step": 0}}}, "extra_keys": "allow"},
            {"keys": {"a": {"items": {"keys": {}}}}},
        )
    ]
)


@FUZZ
@given(MATCHERS, ODD_VALUES, TEXT)
def test_any_value_is_matched_or_refused_with_a_reason(
    matcher: ParamMatcher, value: Any, result_text: str
) -> None:
    source = ToolCallRecord(
        index=0, server="s", tool="t", arguments={}, ok=True, result_text=result_text
    )
    derived = ParamMatcher.model_validate({"derived_from_step": 0})
    for each in (matcher, derived):
        reason = check(each, value, Chain({0: [source]}, before=1))
        assert reason is None or isinstance(reason, str)
    key = arguments_key("t", value)
    assert key.startswith("t")
    problem = wire_problem(value)
    if isinstance(value, float) and not math.isfinite(value):
        assert problem is not None
