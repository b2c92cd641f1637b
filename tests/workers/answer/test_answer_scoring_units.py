"""Grounding buckets on planted citations, the ±5 boundary, EOF, partitioning and keywords."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_farm.scenarios import find_scenario
from mcp_farm.schema import JudgeSettings, Message
from mcp_farm.workers.answer import (
    counts,
    coverage,
    extract,
    grounding_rate,
    partition,
    verify,
)
from mcp_farm.workers.answer.scoring import Transcript, score_answer

# Line numbers matter: `first` is defined on line 4, `CONSTANT` on line 1, `Box.open` on 9.
SOURCE = """CONSTANT = 1


def first(x):
    return x + CONSTANT


class Box:
    def open(self):
        return first(2)
""" + "\n".join(f"# filler {i}" for i in range(20))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "README.md").write_text("one\ntwo\n", encoding="utf-8")
    return tmp_path


def status(prose: str, repo: Path, tolerance: int = 5) -> list[str]:
    return [c.status for c in verify(extract(prose), repo, tolerance)]


def test_each_bucket_on_planted_citations(repo: Path) -> None:
    prose = (
        "`first` (pkg/mod.py:4) adds the constant. The box is in pkg/box.py:3. "
        "It also reads pkg/mod.py:999."
    )
    found = verify(extract(prose), repo)
    assert [c.status for c in found] == ["grounded", "unresolved", "hallucinated"]
    assert "past end of file" in found[2].detail
    assert counts(found) == {"grounded": 1, "unresolved": 1, "hallucinated": 1}
    assert grounding_rate(found) == pytest.approx(1 / 3)


def test_a_symbol_exactly_at_the_tolerance_is_grounded_one_further_is_not(repo: Path) -> None:
    # CONSTANT is defined on line 1 and used on line 5; the filler starts at line 11.
    lines = len(SOURCE.splitlines())
    assert lines > 12
    assert status("`CONSTANT` (pkg/mod.py:11)", repo, tolerance=6) == ["grounded"]
    assert status("`CONSTANT` (pkg/mod.py:12)", repo, tolerance=6) == ["hallucinated"]
    # With the default ±5: line 10 is 5 away from its use on line 5, line 11 is 6 away.
    assert status("`CONSTANT` (pkg/mod.py:10)", repo) == ["grounded"]
    assert status("`CONSTANT` (pkg/mod.py:11)", repo) == ["hallucinated"]


def test_a_cited_line_inside_a_definition_grounds_its_name(repo: Path) -> None:
    assert status("`Box.open` at pkg/mod.py:10", repo) == ["grounded"]
    assert status("`Box.open` at pkg/mod.py:25", repo) == ["hallucinated"]


def test_the_last_line_is_in_range_and_the_next_is_past_eof(repo: Path) -> None:
    last = len(SOURCE.splitlines())
    assert status(f"see pkg/mod.py:{last}", repo) == ["grounded"]
    assert status(f"see pkg/mod.py:{last + 1}", repo) == ["hallucinated"]
    assert status(f"see pkg/mod.py:{last - 1}-{last + 1}", repo) == ["hallucinated"]


def test_every_citation_form_is_extracted() -> None:
    prose = (
        "In pkg/mod.py:4, pkg/mod.py:4-6, pkg/mod.py#L9, pkg/mod.py#L9-L10, "
        "[link](./pkg/mod.py#L2) and plain README.md."
    )
    refs = [(r.path, r.line_start, r.line_end) for r in extract(prose)]
    assert refs == [
        ("pkg/mod.py", 4, 4),
        ("pkg/mod.py", 4, 6),
        ("pkg/mod.py", 9, 9),
        ("pkg/mod.py", 9, 10),
        ("pkg/mod.py", 2, 2),
        ("README.md", None, None),
    ]


def test_a_symbol_beside_the_citation_is_captured_but_not_one_further_on() -> None:
    refs = extract("`Box.open()` (pkg/mod.py:9) calls it; pkg/mod.py:4 — `first` adds one.")
    assert [r.symbol for r in refs] == ["Box.open", "first"]
    (ref,) = extract("It pauses (pkg/mod.py:4), and the rest is in `other` later.")
    assert ref.symbol is None


def test_paths_that_escape_the_checkout_are_unresolved(repo: Path, tmp_path: Path) -> None:
    (tmp_path.parent / "outside.py").write_text("x = 1\n", encoding="utf-8")
    assert status("../outside.py:1 and /etc/hosts.txt", repo) == ["unresolved", "unresolved"]


def test_a_keyword_or_citation_only_in_the_audit_stream_earns_nothing(repo: Path) -> None:
    call = {"id": "c0", "name": "read", "arguments": {"query": "first pkg/mod.py:4"}}
    transcript = [
        Message(role="system", content="Answer about first."),
        Message(role="user", content="Where is first?"),
        Message(role="assistant", content='{"tool": "read"}', tool_calls=[call]),
        Message(role="tool", content="first is at pkg/mod.py:4", tool_call_id="c0"),
        Message(role="assistant", content="I could not find it."),
    ]
    parts = partition(transcript)
    assert parts.prose == "I could not find it."
    assert "pkg/mod.py:4" in parts.audit
    assert coverage(parts.prose, ["first"]) == 0.0
    assert extract(parts.prose) == []
    answered = [*transcript[:-1], Message(role="assistant", content="`first` is pkg/mod.py:4.")]
    prose = partition(answered).prose
    assert coverage(prose, ["first"]) == 1.0
    assert status(prose, repo) == ["grounded"]


def test_a_call_the_decoder_could_not_read_is_audit_not_prose(repo: Path) -> None:
    # A JSON-mode call cut off at the token limit: its keyword and citation were never said.
    cut = '{"tool": "read", "arguments": {"query": "first is at pkg/mod.py:4'
    opening = [
        Message(role="system", content="Answer about first."),
        Message(role="user", content="Where is first?"),
    ]
    marked = partition([*opening, Message(role="assistant", content=cut, undecoded=True)])
    assert marked.prose == ""
    assert "pkg/mod.py:4" in marked.audit
    assert coverage(marked.prose, ["first"]) == 0.0 and extract(marked.prose) == []
    # A transcript stored before messages were marked: the trial's format_error says it.
    stored = [*opening, Message(role="assistant", content=cut)]
    assert partition(stored, format_error=True).prose == ""
    assert "pkg/mod.py:4" in partition(stored, format_error=True).audit
    # Prose said before the broken call still counts.
    said = [*opening, Message(role="assistant", content="`first` is pkg/mod.py:4."), stored[-1]]
    assert partition(said, format_error=True).prose == "`first` is pkg/mod.py:4."


@pytest.mark.parametrize(("outcome", "said"), [("format_error", False), ("output_mismatch", True)])
def test_scoring_a_format_error_trial_takes_its_unmarked_last_reply_as_audit(
    outcome: str, said: bool, tmp_path: Path
) -> None:
    # A transcript stored before broken replies were marked `undecoded`: only the trial's
    # outcome says the last reply was a call the decoder could not read.
    scenario = find_scenario("code", "code.where.keep-alive")
    assert scenario.answer is not None and scenario.example_answer
    trial = Transcript(
        trial_id="t",
        sweep_id="s",
        outcome=outcome,
        transcript=[
            Message(role="system", content="You answer questions about code."),
            Message(role="user", content=scenario.prompt),
            Message(role="assistant", content=scenario.example_answer),
        ],
        calls=[],
        latency_s=1.0,
        tokens_prompt=0,
        tokens_completion=0,
        final_answer=None,
        seed=0,
    )
    score = anyio.run(
        partial(
            score_answer,
            trial=trial,
            scenario=scenario,
            suite="code",
            toolset=None,
            settings=JudgeSettings(),
            judge=None,
            repos=tmp_path / "repos",
            scoring="s",
        )
    )
    if said:  # the very same words, from a trial that did not end on a broken call, count
        assert score.keyword_coverage == 1.0 and score.grounding_rate == 1.0
    else:
        assert score.keyword_coverage == 0.0 and score.citations == []
        assert score.grounding_rate is None


def test_few_shot_examples_before_the_request_are_not_the_agents_prose() -> None:
    transcript = [
        Message(role="user", content="example question"),
        Message(role="assistant", content="example answer with first"),
        Message(role="user", content="the real question"),
        Message(role="assistant", content="the real answer"),
    ]
    assert partition(transcript).prose == "the real answer"


def test_keywords_match_whole_words_and_alternatives() -> None:
    assert coverage("The sender calls sendall.", ["send"]) == 0.0
    prose = "The sender calls Connection.send and checks Content-Length (HTTP/1.1)."
    assert coverage(prose, ["Connection.send", "content-length", "1.1"]) == 1.0
    assert coverage(prose, ["chunked|Content-Length", "missing"]) == 0.5
    assert coverage(prose, []) is None


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_extract_never_raises_and_every_path_has_an_extension(text: str) -> None:
    for ref in extract(text):
        assert "." in ref.path.rsplit("/", 1)[-1]


@settings(max_examples=300, deadline=None)
@given(st.text(), st.lists(st.text(min_size=1), max_size=5))
def test_coverage_is_a_share(text: str, keywords: list[str]) -> None:
    value = coverage(text, keywords)
    assert value is None or 0.0 <= value <= 1.0


INVENTED = [
    "h11/_connection.py:9084-9090",
    'File "h11/_connection.py", line 9084',
    "h11/_connection.py – line 9084",
    "h11/_connection.py — lines 84–9090",
    "h11/_connection.py → line 9084",
    "h11/_connection.py [line 9084]",
    "h11/_connection.py (see L9084)",
    "h11/_connection.py @ line 9084",
    "h11/_connection.py: ~line 9084",
    "h11/_connection.py (#9084)",
    "h11/_connection.py, lines 84; 9090",
    "h11/_connection.py, line\n9084",
]
"""One invented place in h11/_connection.py (2,000 lines or so), written many ways."""


def _scored(answer: str, repos: Path) -> tuple[float | None, float, list[str]]:
    """An answer's grounding rate, fairness and citation statuses, as the scorecard gets them
    (no judge: keywords, grounding and efficiency make fairness)."""
    scenario = find_scenario("code", "code.where.keep-alive")
    trial = Transcript(
        trial_id="t",
        sweep_id="s",
        outcome="pass",
        transcript=[
            Message(role="user", content=scenario.prompt or ""),
            Message(role="assistant", content=answer),
        ],
        calls=[],
        latency_s=3.0,
        tokens_prompt=500,
        tokens_completion=200,
        final_answer=answer,
        seed=0,
    )
    score = anyio.run(
        partial(
            score_answer,
            trial=trial,
            scenario=scenario,
            suite="code",
            toolset=None,
            settings=JudgeSettings(),
            judge=None,
            repos=repos,
            scoring="s",
        )
    )
    return score.grounding_rate, score.fairness, [c.status for c in score.citations]


def test_the_same_invented_lines_score_the_same_however_they_are_written(tmp_path: Path) -> None:
    # Issue 27: two agents citing the same invented lines scored fairness 0.953 and 0.803
    # depending only on how they wrote them. Each writing here is the ideal answer with its
    # first citation moved past the end of the file.
    answer = find_scenario("code", "code.where.keep-alive").example_answer or ""
    assert "h11/_connection.py:84-90" in answer
    scored = [_scored(answer.replace("h11/_connection.py:84-90", f), tmp_path) for f in INVENTED]
    assert [s[2][0] for s in scored] == ["hallucinated"] * len(INVENTED), scored
    assert len({(rate, fair) for rate, fair, _ in scored}) == 1, scored
    rate, fair, _ = scored[0]
    right_rate, right_fair, _ = _scored(answer, tmp_path)
    assert rate is not None and right_rate is not None and rate < right_rate and fair < right_fair
