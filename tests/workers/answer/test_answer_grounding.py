"""Citation forms and symbol attribution beyond the basics, the audit stream's contents,
keyword edge cases, and the code suite's own example answers at the pinned tree."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_farm.scenarios import (
    FIXTURES_DIR,
    load_suite,
)
from mcp_farm.schema import (
    GROUNDINGS,
    Message,
)
from mcp_farm.workers.answer import (
    coverage,
    extract,
    found,
    partition,
    verify,
)

# `handle` is defined on lines 4-6; line 9 calls it.
SOURCE = """import os


def handle(event):
    size = len(event)
    return size


result = handle(os.sep)
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    (root / "pkg").mkdir()
    (root / "pkg" / "mod.py").write_text(SOURCE, encoding="utf-8")
    return root


def located(prose: str) -> list[tuple[str, int | None, int | None, str | None]]:
    return [(r.path, r.line_start, r.line_end, r.symbol) for r in extract(prose)]


def test_lines_written_in_words_after_a_path_are_its_lines() -> None:
    prose = "pkg/mod.py (line 5) and pkg/mod.py (Lines 4 – 6), then pkg/mod.py:9-4."
    assert located(prose) == [
        ("pkg/mod.py", 5, 5, None),
        ("pkg/mod.py", 4, 6, None),
        ("pkg/mod.py", 4, 9, None),
    ]


def test_calls_and_urls_are_not_citations() -> None:
    prose = "Call `resp.json()`, as https://example.org/blob/main/pkg/mod.py#L4 shows."
    assert extract(prose) == []


def test_a_name_written_after_one_citation_is_not_reused_before_the_next() -> None:
    prose = "pkg/mod.py:4 — `handle`, pkg/mod.py:9 — `result`."
    assert [r.symbol for r in extract(prose)] == ["handle", "result"]


def test_a_hard_wrapped_clause_keeps_its_name_but_a_new_list_item_does_not() -> None:
    assert located("`handle`\n(pkg/mod.py:4)") == [("pkg/mod.py", 4, 4, "handle")]
    assert located("- `handle`\n- pkg/mod.py:4") == [("pkg/mod.py", 4, 4, None)]


def test_a_line_number_too_long_to_be_a_line_is_never_grounded(repo: Path) -> None:
    for digits in ("9" * 5000, "1234567890"):
        (ref,) = extract(f"pkg/mod.py:{digits}")
        assert (ref.path, ref.line_start, ref.bad_line) == ("pkg/mod.py", None, digits)
        (cited,) = verify([ref], repo)
        assert cited.status == "hallucinated" and "cannot be a line" in cited.detail
    # Leading zeros are no extra digits.
    assert located("pkg/mod.py:0000000000005") == [("pkg/mod.py", 5, 5, None)]


def test_a_name_used_at_the_cited_line_is_grounded_and_says_so(repo: Path) -> None:
    (call, body, far) = verify(
        extract("`os.sep` (pkg/mod.py:9); `handle` in pkg/mod.py:5; `handle` at pkg/mod.py:1."),
        repo,
        tolerance=2,
    )
    assert (call.status, body.status, far.status) == ("grounded", "grounded", "hallucinated")
    assert "used" in call.detail
    assert "defined at line 4" in far.detail


def test_line_zero_is_before_the_first_line(repo: Path) -> None:
    (cited,) = verify(extract("pkg/mod.py:0"), repo)
    assert cited.status == "hallucinated"
    assert cited.detail == "line 0 is before the first line"


def test_the_audit_stream_holds_calls_their_arguments_and_results() -> None:
    call = {"id": "c0", "name": "search", "arguments": {"pattern": "def handle"}}
    transcript = [
        Message(role="system", content="You answer questions about pkg."),
        Message(role="user", content="Where is handle?"),
        Message(role="assistant", content="Let me search.", tool_calls=[call]),
        Message(role="tool", content="pkg/mod.py:4: def handle(event):", tool_call_id="c0"),
        Message(role="assistant", content="`handle` is at pkg/mod.py:4."),
    ]
    parts = partition(transcript)
    assert parts.prose == "`handle` is at pkg/mod.py:4."
    assert parts.audit.split("\n\n") == [
        "Let me search.",
        'search {"pattern": "def handle"}',
        "pkg/mod.py:4: def handle(event):",
    ]
    assert "You answer" not in parts.audit + parts.prose


def test_without_a_user_message_every_assistant_reply_is_prose() -> None:
    transcript = [
        Message(role="assistant", content="one"),
        Message(role="assistant", content="two"),
    ]
    assert partition(transcript).prose == "one\n\ntwo"


def test_keywords_keep_their_punctuation_and_follow_wrapped_lines() -> None:
    prose = 'An empty b"" means EOF; the limit is 16 *\n1024 bytes.'
    assert found(prose, ['b""', "16 * 1024|16384", "eof", "bytes|", "EO"]) == [
        True,
        True,
        True,
        True,
        False,
    ]


def test_the_code_suites_example_answers_are_grounded_and_complete() -> None:
    suite = load_suite("code")
    assert suite.repo is not None
    tree = FIXTURES_DIR / suite.repo.fixture
    checked = 0
    for scenario in suite.scenarios:
        if scenario.answer is None or not scenario.example_answer:
            continue
        prose = scenario.example_answer
        assert coverage(prose, scenario.answer.keywords) in (None, 1.0), scenario.id
        cited = verify(extract(prose), tree)
        assert cited, scenario.id
        assert [c.detail for c in cited if c.status != "grounded"] == [], scenario.id
        checked += 1
    assert checked > 0


MOVED = [
    "{path}:{n}",
    "**{path}**:{n}",
    'File "{path}", line {n}',
    "line {n} of {path}",
    "{path} around line {n:,}",
    "{path}?plain=1#L{n}",
    "{path}@f40c9c3:{n}",
    "{path}, lines 1, {n}",
    "{path}, line #{n}",
    "{path} – line {n}",
    "{path} → line {n}",
    "{path} [line {n}]",
    "{path} (see L{n})",
    "{path} (#{n})",
    "{path}, lines 1; {n}",
]


@pytest.mark.parametrize("form", MOVED)
def test_the_code_suites_example_answers_with_a_line_moved_past_the_end_never_ground_it(
    form: str,
) -> None:
    # The self-check of the ideal answers, with one mistake: each answer's first citation is
    # moved past the end of its file and written another way. That citation must not ground.
    suite = load_suite("code")
    assert suite.repo is not None
    tree = FIXTURES_DIR / suite.repo.fixture
    for scenario in suite.scenarios:
        assert scenario.example_answer, scenario.id
        first = next(c for c in extract(scenario.example_answer) if c.line_start is not None)
        size = len((tree / first.path).read_text(encoding="utf-8").splitlines())
        moved = form.format(path=first.path, n=size + 1000)
        prose = scenario.example_answer.replace(first.text, moved, 1)
        before = verify(extract(scenario.example_answer), tree)
        after = verify(extract(prose), tree)
        assert [c.status for c in after].count("hallucinated") == 1, (scenario.id, moved)
        assert sum(c.status == "grounded" for c in after) < len(before), (scenario.id, moved)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("pkg/mod.py:#L-–() `handle0123456789\n,."))))
def test_verify_gives_every_extracted_reference_a_bucket(repo: Path, text: str) -> None:
    refs = extract(text)
    cited = verify(refs, repo)
    assert [c.status in GROUNDINGS for c in cited] == [True] * len(refs)
    for ref in refs:
        assert (ref.line_start is None) == (ref.line_end is None)
        assert ref.line_start is None or ref.line_end is None or ref.line_start <= ref.line_end


@settings(max_examples=200, deadline=None)
@given(st.text(), st.lists(st.text(), max_size=6))
def test_found_answers_every_keyword(text: str, keywords: list[str]) -> None:
    assert len(found(text, keywords)) == len(keywords)
