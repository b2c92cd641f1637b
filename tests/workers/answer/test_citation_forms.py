"""Citation forms that once lost their line, and the lenient cases, each decided (the
decisions are listed in docs/answer-quality.md, "Citation grounding")."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_farm.workers.answer import (
    extract,
    verify,
)

# Connection.send on lines 2-3, Other.send on lines 10-11.
CONN = """class Connection:
    def send(self, data):
        return self._write(data)

    def _write(self, data):
        return len(data)


class Other:
    def send(self, data):
        return None
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    (root / "pkg").mkdir()
    (root / "pkg" / "conn.py").write_text(CONN, encoding="utf-8")
    return root


def statuses(prose: str, repo: Path) -> list[str]:
    return [c.status for c in verify(extract(prose), repo, tolerance=1)]


@pytest.mark.parametrize(
    "prose",
    [
        "see `pkg/conn.py`:999",
        "see `pkg/conn.py` (line 400)",
        "see pkg/conn.py, line 400",
        "see `pkg/conn.py`, line 400",
        "see pkg/conn.py:12345678901",
        "see pkg/conn.py#L400",
        "see pkg/conn.py line 99999",
        "see `pkg/conn.py`: 99999",
        "see pkg/conn.py:L99999",
        "see pkg/conn.py: line 99999",
        "see pkg/conn.py at line 99999",
        "see pkg/conn.py on line 99999",
        "see pkg/conn.py (L99999)",
        "see pkg/conn.py 99999",
        "see pkg/conn.py, ln 99999",
        "see pkg/conn.py:99999a",
        "see pkg/conn.py:99999行",
    ],
)
def test_a_line_past_the_end_is_never_grounded_whatever_the_form(prose: str, repo: Path) -> None:
    assert statuses(prose, repo) == ["hallucinated"]


@pytest.mark.parametrize(
    ("prose", "line"),
    [
        ("`pkg/conn.py`:2", 2),
        ("`pkg/conn.py` (line 5)", 5),
        ("pkg/conn.py, line 6", 6),
        ("pkg/conn.py line 6", 6),
        ("`pkg/conn.py`: 6", 6),
        ("pkg/conn.py:L6", 6),
        ("pkg/conn.py: line 6", 6),
        ("pkg/conn.py at line 6", 6),
        ("pkg/conn.py (L6)", 6),
        ("pkg/conn.py#6", 6),
        ("pkg/conn.py 6", 6),
        ("pkg/conn.py, l. 6.", 6),
    ],
)
def test_the_same_forms_keep_their_line_when_it_exists(prose: str, line: int, repo: Path) -> None:
    (ref,) = extract(prose)
    assert (ref.path, ref.line_start, ref.line_end) == ("pkg/conn.py", line, line)
    assert statuses(prose, repo) == ["grounded"]


@pytest.mark.parametrize(
    "written",
    [
        "pkg/conn.py, lines {} to {}",
        "pkg/conn.py lines {}-{}",
        "pkg/conn.py L{}-L{}",
        "pkg/conn.py:{}-{}",
        "pkg/conn.py#L{}-L{}",
        "pkg/conn.py (lines {} – {})",
        "pkg/conn.py:{}..{}",
        "pkg/conn.py, lines {} and {}",
        "pkg/conn.py line {} through line {}",
    ],
)
def test_a_range_is_grounded_only_when_both_ends_are_in_the_file(written: str, repo: Path) -> None:
    (ref,) = extract(written.format(1, 99999))
    assert (ref.line_start, ref.line_end) == (1, 99999)
    assert statuses(written.format(1, 99999), repo) == ["hallucinated"]
    assert statuses(written.format(99999, 1), repo) == ["hallucinated"]
    assert statuses(written.format(2, 6), repo) == ["grounded"]


@pytest.mark.parametrize("glued", ["2a", "2行", "2.5", "2_0", "1-2b", "L2nd"])
def test_a_line_glued_to_what_follows_cannot_be_read_and_is_never_grounded(
    glued: str, repo: Path
) -> None:
    # Line 2 exists, but `2a` is not line 2: what the answer meant cannot be known.
    (ref,) = extract(f"see pkg/conn.py:{glued} here")
    assert (ref.line_start, ref.bad_line) == (None, glued.removeprefix("L"))
    assert statuses(f"see pkg/conn.py:{glued} here", repo) == ["hallucinated"]


@pytest.mark.parametrize(
    "prose",
    [
        "pkg/conn.py:send",
        "pkg/conn.py::Connection",
        "pkg/conn.py, last line",
        "pkg/conn.py at least",
        "pkg/conn.py\n\n2. The next item",
        "pkg/conn.py (see above)",
    ],
)
def test_text_after_a_path_with_no_number_leaves_a_bare_path(prose: str, repo: Path) -> None:
    (ref,) = extract(prose)
    assert (ref.text, ref.line_start, ref.bad_line) == ("pkg/conn.py", None, None)
    assert statuses(prose, repo) == ["grounded"]


PAST_END = st.integers(min_value=len(CONN.splitlines()) + 1, max_value=10**12)
JOINS = st.tuples(
    st.sampled_from(["", " "]),
    st.sampled_from(["", ":", "#", "(", ","]),
    st.sampled_from(["", " "]),
    st.sampled_from(["", "at ", "on ", "At "]),
    st.sampled_from(["", "line ", "lines ", "Line", "L", "l. ", "ln "]),
)
RANGE = st.sampled_from(["-", " - ", "–", "..", " to ", " through ", " and ", "-L", " to line "])
GLUE = st.text(alphabet="abzLZ_行號ñ", min_size=1, max_size=3) | st.sampled_from([".5", "0x"])


def joined(backtick: bool, joins: tuple[str, ...]) -> str:
    """The path and what joins a number to it; unquoted, a path needs a space or a mark other
    than `(` after it (a letter there would make it another file's name, and `(` a call)."""
    join = "".join(joins)
    if backtick:
        return f"`pkg/conn.py`{join}"
    return f"pkg/conn.py{join if join[:1] in (' ', ':', '#', ',') else ' ' + join}"


@settings(max_examples=300, deadline=None)
@given(
    backtick=st.booleans(),
    joins=JOINS,
    past=PAST_END,
    other=st.none() | st.tuples(RANGE, st.integers(min_value=0, max_value=10**4), st.booleans()),
    glue=st.none() | GLUE,
)
def test_a_line_past_the_end_is_never_grounded_whatever_joins_it_to_its_path(
    repo: Path,
    backtick: bool,
    joins: tuple[str, ...],
    past: int,
    other: tuple[str, int, bool] | None,
    glue: str | None,
) -> None:
    numbers = f"{past}"
    if other is not None:
        way, end, first = other
        numbers = f"{end}{way}{past}" if first else f"{past}{way}{end}"
    prose = f"see {joined(backtick, joins)}{numbers}{glue or ''} then more."
    cited = verify(extract(prose), repo, tolerance=1)
    assert [c.status for c in cited] == ["hallucinated"], prose


@settings(max_examples=200, deadline=None)
@given(backtick=st.booleans(), joins=JOINS, line=st.integers(1, 11), glue=GLUE)
def test_a_line_in_the_file_glued_to_what_follows_is_never_grounded(
    repo: Path, backtick: bool, joins: tuple[str, ...], line: int, glue: str
) -> None:
    prose = f"see {joined(backtick, joins)}{line}{glue} then more."
    assert statuses(prose, repo) == ["hallucinated"], prose


def test_a_path_with_a_bracket_right_after_it_is_a_call_not_a_citation() -> None:
    assert extract("`resp.json()` and `pkg/conn.py(99999)`") == []


def test_a_name_is_the_citations_symbol_up_to_100_characters_before_it() -> None:
    # The name's opening backtick may be at most 100 characters before the path.
    near = "`send`" + " " * 94 + "pkg/conn.py:2"
    far = "`send`" + " " * 95 + "pkg/conn.py:2"
    assert near.index("pkg") == 100
    assert [r.symbol for r in extract(near)] == ["send"]
    assert [r.symbol for r in extract(far)] == [None]
    # After the citation, the whole name must be written within 30 characters of its end.
    assert [r.symbol for r in extract("pkg/conn.py:2" + " " * 24 + "`send`")] == ["send"]
    assert [r.symbol for r in extract("pkg/conn.py:2" + " " * 25 + "`send`")] == [None]


def test_class_dot_method_must_be_that_class_at_the_line(repo: Path) -> None:
    # Connection.send is at 2-3; Other.send is at 10-11. Naming the wrong class is wrong,
    # though a method called `send` is defined right there.
    assert statuses("`Connection.send` (pkg/conn.py:2)", repo) == ["grounded"]
    assert statuses("`Other.send` (pkg/conn.py:10)", repo) == ["grounded"]
    assert statuses("`Connection.send` (pkg/conn.py:10)", repo) == ["hallucinated"]
    assert statuses("`Other.send` (pkg/conn.py:2)", repo) == ["hallucinated"]
    # A use of the method inside the class's body is a fair citation of it.
    assert statuses("`Connection._write` (pkg/conn.py:3)", repo) == ["grounded"]
    # A class the file does not define: judged by the method name alone, as before.
    assert statuses("`Socket.send` (pkg/conn.py:2)", repo) == ["grounded"]


@pytest.mark.parametrize(
    "prose", ["/pkg/conn.py:2", "C:\\work\\pkg\\conn.py:2", "C:/work/pkg/conn.py:2"]
)
def test_an_absolute_or_drive_letter_path_is_unresolved(prose: str, repo: Path) -> None:
    assert statuses(prose, repo) == ["unresolved"]


def test_a_backslash_path_is_the_same_path(repo: Path) -> None:
    (ref,) = extract("pkg\\conn.py:2")
    assert ref.path == "pkg/conn.py"
    assert statuses("pkg\\conn.py:2", repo) == ["grounded"]
    assert statuses("pkg\\conn.py:99", repo) == ["hallucinated"]


def test_a_symbol_named_in_an_earlier_sentence_is_not_the_citations(repo: Path) -> None:
    prose = "`Other.send` returns None. The writer is at pkg/conn.py:5."
    (ref,) = extract(prose)
    assert ref.symbol is None
    assert statuses(prose, repo) == ["grounded"]  # a file and a line in range, nothing more


def test_identical_citations_count_once_and_different_ones_each(repo: Path) -> None:
    assert len(extract("pkg/conn.py:2, and again pkg/conn.py:2.")) == 1
    assert len(extract("pkg/conn.py:2 and pkg/conn.py:5")) == 2
    # The same place with a different symbol is a different claim.
    assert len(extract("`send` at pkg/conn.py:2. `Connection` at pkg/conn.py:2.")) == 2


# ------------------------------------------------------------------ every common way of
# writing a line (issue 27): each is read, so a line past the end is caught whatever the form.

FORMS = [
    "**pkg/conn.py**:{n}",
    "*pkg/conn.py*:{n}",
    '"pkg/conn.py":{n}',
    "'pkg/conn.py', line {n}",
    "“pkg/conn.py”, line {n}",
    '  File "pkg/conn.py", line {n}, in send',
    "line {n} of pkg/conn.py",
    "line {n} of `pkg/conn.py`",
    "lines {n}-{n} in pkg/conn.py",
    "at line {n} in the file pkg/conn.py",
    "pkg/conn.py around line {n}",
    "pkg/conn.py, near line {n}",
    "around line {n} of pkg/conn.py",
    "pkg/conn.py line #{n}",
    "pkg/conn.py, line no. {n}",
    "pkg/conn.py, line number {n}",
    "pkg/conn.py, line: {n}",
    "pkg/conn.py:~{n}",
    "pkg/conn.py (line ≈{n})",
    "pkg/conn.py?plain=1#L{n}",
    "pkg/conn.py@f40c9c3:{n}",
    "pkg/conn.py@main#L{n}",
    "pkg/conn.py's line {n}",
    "pkg/conn.py, see line {n}",
    "[pkg/conn.py](pkg/conn.py#L{n})",
    "[`pkg/conn.py`](https://example.org/blob/abc/pkg/conn.py#L{n})",
    "pkg/conn.py – line {n}",
    "pkg/conn.py — lines {n}–{n}",
    "pkg/conn.py - line {n}",
    "pkg/conn.py | line {n}",
    "pkg/conn.py → line {n}",
    "pkg/conn.py -> line {n}",
    "pkg/conn.py [line {n}]",
    "pkg/conn.py (see L{n})",
    "pkg/conn.py, cf. L{n}",
    "pkg/conn.py @ line {n}",
    "pkg/conn.py: ~line {n}",
    "pkg/conn.py, line\n{n}",
]


@pytest.mark.parametrize("form", FORMS)
def test_every_common_way_of_writing_a_line_reads_it(form: str, repo: Path) -> None:
    (ref,) = extract(f"see {form} for it.".format(n=6))
    assert (ref.path, ref.line_start, ref.line_end, ref.bad_line) == ("pkg/conn.py", 6, 6, None)
    assert statuses(f"see {form} for it.".format(n=6), repo) == ["grounded"]
    assert statuses(f"see {form} for it.".format(n=999), repo) == ["hallucinated"]


@pytest.mark.parametrize(
    ("written", "lines"),
    [
        ("pkg/conn.py, lines 2, {n}", (2, "n")),
        ("pkg/conn.py lines 2, 3 and {n}", (2, "n")),
        ("pkg/conn.py:2, {n}", (2, "n")),
        ("pkg/conn.py (L2, L{n})", (2, "n")),
        ("pkg/conn.py:2...{n}", (2, "n")),
        ("pkg/conn.py:2…{n}", (2, "n")),
        ("pkg/conn.py lines 2 thru {n}", (2, "n")),
        ("lines 2, {n} of pkg/conn.py", (2, "n")),
        ("pkg/conn.py — lines 2–{n}", (2, "n")),
        ("pkg/conn.py lines 2; {n}", (2, "n")),
    ],
)
def test_every_number_of_a_list_or_range_is_held(
    written: str, lines: tuple[int, str], repo: Path
) -> None:
    (ref,) = extract(written.format(n=6))
    assert (ref.line_start, ref.line_end) == (2, 6)
    assert statuses(written.format(n=6), repo) == ["grounded"]
    assert statuses(written.format(n=999), repo) == ["hallucinated"]


@pytest.mark.parametrize(
    ("prose", "line"),
    [
        ("pkg/conn.py:1,000", 1000),
        ("pkg/conn.py, line 12,345", 12345),
        ("line 1,000 of pkg/conn.py", 1000),
    ],
)
def test_a_number_with_thousands_separators_is_one_line(prose: str, line: int, repo: Path) -> None:
    (ref,) = extract(prose)
    assert (ref.line_start, ref.line_end) == (line, line)
    assert statuses(prose, repo) == ["hallucinated"]


@pytest.mark.parametrize(
    "prose",
    [
        "pkg/conn.py:-6",
        "pkg/conn.py:+6",
        "pkg/conn.py, line -6",
        "pkg/conn.py#L−6",
        "pkg/conn.py:[6]",
        "pkg/conn.py:(6)",
        "pkg/conn.py (see line ≥6)",
        "line ≥6 of pkg/conn.py",
        # A line-like token right by the path that no form reads (issue 27).
        "pkg/conn.py (#6)",
        "pkg/conn.py (see PR #6)",
        "pkg/conn.py: `send` (line 6b)",
        "line 6b — pkg/conn.py",
    ],
)
def test_a_line_like_number_that_cannot_be_read_is_never_grounded(prose: str, repo: Path) -> None:
    # Line 6 exists, but a signed or wrapped number is no line anyone can check.
    (ref,) = extract(prose)
    assert ref.line_start is None and ref.bad_line
    assert statuses(prose, repo) == ["hallucinated"]


TABLE = """| File | Line | What |
|------|-----:|------|
| `pkg/conn.py` | {a} | the send |
| **pkg/conn.py** | L{b} | the write |
| pkg/conn.py | n/a | the module |
"""


def test_a_table_with_a_line_column_gives_each_row_its_line(repo: Path) -> None:
    refs = extract(TABLE.format(a=2, b=5))
    assert [(r.path, r.line_start) for r in refs] == [
        ("pkg/conn.py", 2),
        ("pkg/conn.py", 5),
        ("pkg/conn.py", None),
    ]
    assert statuses(TABLE.format(a=2, b=999), repo) == ["grounded", "hallucinated", "grounded"]
    assert statuses(TABLE.format(a=999, b="6?x"), repo)[:2] == ["hallucinated", "hallucinated"]


def test_a_table_without_a_line_column_reads_no_line_from_other_cells(repo: Path) -> None:
    table = "| File | Calls |\n|---|---|\n| pkg/conn.py | 999 |\n"
    (ref,) = extract(table)
    assert (ref.line_start, ref.bad_line) == (None, None)


@pytest.mark.parametrize(
    "prose",
    [
        "pkg/conn.py (300 lines)",
        "pkg/conn.py, 2, 3 more callers",
        "tests/test_x.py::test_1",
        "pkg/conn.py in 3 places",
        "Is it pkg/conn.py? 12 people said so",
    ],
)
def test_a_number_that_is_no_line_is_not_read_as_one(prose: str) -> None:
    refs = extract(prose)
    assert all(r.bad_line is None for r in refs)
    assert all(r.line_end in (None, 2) for r in refs)


@pytest.mark.parametrize(
    "prose",
    [
        "pkg/conn.py and line 999 of pkg/b.py",
        "pkg/b.py, line 999 and pkg/conn.py",
        "pkg/conn.py. It is short. Line 999 is another story.",
        "pkg/conn.py\n\n- line 999 of the log",
        "pkg/conn.py – 999 callers",
    ],
)
def test_a_line_of_another_path_or_sentence_leaves_a_bare_path(prose: str, repo: Path) -> None:
    (ref, *_) = [r for r in extract(prose) if r.path == "pkg/conn.py"]
    assert (ref.line_start, ref.bad_line) == (None, None), ref
    assert [c.status for c in verify([ref], repo)] == ["grounded"]


@pytest.mark.parametrize(
    "form",
    [
        "pkg/conn.py: `send` (line {n})",
        "pkg/conn.py :: line {n}",
        "pkg/conn.py; see the loop at line {n}",
        "line {n} — pkg/conn.py",
        "in line {n} we call pkg/conn.py",
    ],
)
def test_a_line_word_and_number_beside_a_path_in_its_sentence_is_its_line(
    form: str, repo: Path
) -> None:
    (ref,) = extract(f"see {form} for it.".format(n=6))
    assert (ref.line_start, ref.line_end, ref.bad_line) == (6, 6, None)
    assert statuses(f"see {form} for it.".format(n=6), repo) == ["grounded"]
    assert statuses(f"see {form} for it.".format(n=999), repo) == ["hallucinated"]


def test_a_line_like_token_beside_a_path_is_kept_as_the_unreadable_line() -> None:
    (ref,) = extract("see pkg/conn.py (#999) for it")
    assert (ref.text, ref.line_start, ref.bad_line) == ("pkg/conn.py (#999", None, "#999")


WRAPS = st.sampled_from([("", ""), ("`", "`"), ("**", "**"), ("*", "*"), ('"', '"'), ("“", "”")])
AFTER_JOINS = st.sampled_from(
    [
        ":",
        ", line ",
        "#L",
        "?plain=1#L",
        "@f40c9c3:",
        "@main#L",
        ", line #",
        " around line ",
        ", near line ",
        ":~",
        " (line no. ",
        ", line: ",
        "'s line ",
        " lines ",
    ]
)
BEFORE_JOINS = st.sampled_from(
    ["line {} of ", "at line {} in ", "lines {} in the file ", "L{} of "]
)
SEPS = st.sampled_from(["-", "..", "...", "…", " to ", ", ", " and ", ", L", ", line "])


def written(n: int, grouped: bool) -> str:
    return f"{n:,}" if grouped else str(n)


@settings(max_examples=400, deadline=None)
@given(
    wrap=WRAPS,
    where=st.sampled_from(["after", "before", "table"]),
    after_join=AFTER_JOINS,
    before_join=BEFORE_JOINS,
    past=PAST_END,
    others=st.lists(st.integers(1, 11), max_size=2),
    at=st.integers(0, 2),
    sep=SEPS,
    grouped=st.booleans(),
)
def test_a_line_past_the_end_is_never_grounded_in_any_common_form(
    repo: Path,
    wrap: tuple[str, str],
    where: str,
    after_join: str,
    before_join: str,
    past: int,
    others: list[int],
    at: int,
    sep: str,
    grouped: bool,
) -> None:
    # The invented line may stand anywhere in a range or list; every number is held.
    values = [*others]
    values.insert(min(at, len(values)), past)
    numbers = sep.join(written(v, grouped) for v in values)
    path = f"{wrap[0]}pkg/conn.py{wrap[1]}"
    if where == "after":
        prose = f"See {path}{after_join}{numbers} for it."
    elif where == "before":
        prose = f"See {before_join.format(numbers)}{path} for it."
    else:
        prose = f"| file | line |\n|---|---|\n| {path} | {numbers} |\n"
    assert statuses(prose, repo) == ["hallucinated"], prose


# Whatever mark stands between a path and its line, and however the line word is written, a
# line past the end is never grounded: read where the form is plain, unreadable otherwise.
SEPARATORS = st.sampled_from(
    [
        ":",
        ",",
        ";",
        " -",
        " –",
        " —",
        " ->",
        " →",
        " =>",
        " |",
        " @",
        " (",
        " [",
        " ::",
        " /",
        " ~",
        " >",
        " »",
        " ·",
        " *",
        " +",
        " &",
        " =",
        " ⇒",
        " ‒",
        " ―",
        " \\",
        " ^",
        " %",
    ]
)
LINE_WORDS = st.sampled_from(
    [
        "line ",
        "Line ",
        "LINE ",
        "lines ",
        "line #",
        "line no. ",
        "line number ",
        "line: ",
        "ln ",
        "l. ",
        "L",
        "~line ",
        "≈ line ",
        "#",
        "line\n",
        "line  ",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    sep=SEPARATORS,
    space=st.sampled_from(["", " "]),
    word=LINE_WORDS,
    past=PAST_END,
    side=st.sampled_from(["after", "before"]),
    backtick=st.booleans(),
)
def test_a_line_past_the_end_beside_a_path_is_never_grounded_whatever_marks_part_them(
    repo: Path, sep: str, space: str, word: str, past: int, side: str, backtick: bool
) -> None:
    path = "`pkg/conn.py`" if backtick else "pkg/conn.py"
    if side == "after":
        prose = f"See {path}{sep}{space}{word}{past} for it."
    else:
        prose = f"See {word}{past}{sep} {path} for it."  # a mark glued to it joins its name
    assert statuses(prose, repo) == ["hallucinated"], prose


# ------------------------------------------------------------------ issue 36: every line-like
# token of a sentence belongs to a path, and one the grounding cannot read is never credited.

SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    "form",
    [
        "The send path is pkg/conn.py. The write happens at line {n}.",
        "pkg/conn.py holds the connection class whose send method writes its data, at line {n}.",
        "pkg/conn.py:2 calls it, and the write itself is at line {n}.",
        "pkg/conn.py, lines 2/{n}",
        "pkg/conn.py:2/{n}",
        "pkg/conn.py:2\u2011{n}",
        "pkg/conn.py:2\u2212{n}",
        "pkg/conn.py:2\u2010{n}",
        "pkg/conn.py(2,{n}): later",
        "pkg/conn.py({n}): error C2065: undeclared identifier",
        "pkg/conn.py({n},7): error",
        f"https://github.com/o/r/blob/{SHA}/pkg/conn.py#L{{n}}",
        f"[conn.py](https://github.com/o/r/blob/{SHA}/pkg/conn.py#L{{n}})",
        f"see https://git.example.org/o/r/-/blob/{SHA}/pkg/conn.py#L2-L{{n}}.",
    ],
)
def test_a_line_past_the_end_in_the_outside_forms_is_never_grounded(form: str, repo: Path) -> None:
    prose = form.format(n=999) if "(2,{n})" not in form else form.format(n=5)
    if "(2,{n})" in form:
        # `path(2,5):` is line 2, column 5: the column is no line.
        (ref,) = extract(prose)
        assert (ref.line_start, ref.line_end) == (2, 2)
        return
    assert statuses(prose, repo) == ["hallucinated"], extract(prose)
    assert statuses(form.format(n=3), repo) == ["grounded"], extract(form.format(n=3))


@pytest.mark.parametrize(
    "written",
    ["line nine", "line nine hundred", "line twenty-two", "line XII", "line IV", "lines X"],
)
def test_a_line_written_in_words_or_roman_numerals_is_never_grounded(
    written: str, repo: Path
) -> None:
    for prose in (f"pkg/conn.py, {written}", f"see pkg/conn.py; the loop is at {written}."):
        (ref,) = extract(prose)
        assert ref.bad_line == written, ref
        assert statuses(prose, repo) == ["hallucinated"]


@pytest.mark.parametrize(
    "prose",
    [
        "the line I mean is in pkg/conn.py",
        "pkg/conn.py:2 fixes issue #999 for good.",
        "pkg/conn.py is short. It has few parts. Line 999 is in another file.",
        "pkg/conn.py\n\nLine 999 of the log says so.",
    ],
)
def test_a_token_of_another_sentence_or_an_issue_number_is_not_the_paths_line(
    prose: str, repo: Path
) -> None:
    assert statuses(prose, repo) == ["grounded"], extract(prose)


def test_a_compiler_line_and_a_full_hash_link_are_citations(repo: Path) -> None:
    prose = (
        "pkg/conn.py(2): warning C4100. Also "
        f"https://github.com/o/r/blob/{SHA}/pkg/conn.py#L5 and "
        f"[the other](https://github.com/o/r/blob/{SHA}/pkg/conn.py#L10-L11)."
    )
    refs = extract(prose)
    assert [(r.path, r.line_start, r.line_end) for r in refs] == [
        ("pkg/conn.py", 2, 2),
        ("pkg/conn.py", 5, 5),
        ("pkg/conn.py", 10, 11),
    ]
    assert [c.status for c in verify(refs, repo)] == ["grounded"] * 3


def test_a_path_with_a_bracketed_number_and_no_colon_is_still_a_call() -> None:
    assert extract("call resp.json(2) and data.json()") == []
