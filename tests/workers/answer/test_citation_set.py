"""The labelled citation set (bench/citations.py): every form the docs list, at a real line and
at an impossible one, graded with no false `grounded` and no real citation missed; and the
outside forms of issue 43, item 8, one by one."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.citations import FILE, measure, write_repo
from mcp_farm.workers.answer import extract, verify


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_repo(tmp_path_factory.mktemp("repo"))


def test_the_labelled_set_has_no_false_grounded_and_misses_no_real_citation(repo: Path) -> None:
    found = measure(repo)
    assert found.wrongly_grounded == []
    assert found.missed == []
    assert (found.precision, found.recall) == (1.0, 1.0)


def located(prose: str, repo: Path) -> list[tuple[str, int | None, int | None, str]]:
    refs = extract(prose)
    return [(c.path, c.line_start, c.line_end, c.status) for c in verify(refs, repo, tolerance=1)]


def test_an_editors_fence_header_names_the_lines_of_its_path(repo: Path) -> None:
    assert located("```3600:3610:pkg/conn.py\nreturn 1\n```", repo) == [
        ("pkg/conn.py", 3600, 3610, "hallucinated")
    ]
    assert located("```2:3:pkg/conn.py\nreturn 1\n```", repo) == [("pkg/conn.py", 2, 3, "grounded")]
    # A language alone is no line.
    assert located("```python:pkg/conn.py\nreturn 1\n```", repo) == [
        ("pkg/conn.py", None, None, "grounded")
    ]


def test_ll_is_a_range_of_lines(repo: Path) -> None:
    assert located("See pkg/conn.py, ll. 148\u20132120.", repo) == [
        ("pkg/conn.py", 148, 2120, "hallucinated")
    ]
    assert located("See pkg/conn.py, ll. 2\u20133.", repo) == [("pkg/conn.py", 2, 3, "grounded")]


@pytest.mark.parametrize(
    "prose",
    [
        "pkg/conn.py:\u00b2",
        "pkg/conn.py line \u2079\u2079\u2079",
        "pkg/conn.py\u00b2\u00b3\u2074",
        "pkg/conn.py:\u2083",
        "| File | Line |\n|---|---|\n| pkg/conn.py | \u00b3 |",
    ],
)
def test_superscript_or_subscript_digits_where_a_line_goes_are_never_grounded(
    prose: str, repo: Path
) -> None:
    assert [c.status for c in verify(extract(prose), repo)] == ["hallucinated"]


def test_a_footnote_mark_after_a_path_leaves_a_citation_of_the_file(repo: Path) -> None:
    assert located("see pkg/conn.py\u00b2 for the class.", repo) == [
        ("pkg/conn.py", None, None, "grounded")
    ]


@pytest.mark.parametrize(
    ("head", "cells", "lines"),
    [
        ("| File | Lines (approx.) |\n|---|---|", "| pkg/conn.py | 2–9999 |", (2, 9999)),
        (
            "| File | Start line | End line |\n|---|---|---|",
            "| pkg/conn.py | 2 | 9999 |",
            (2, 9999),
        ),
        ("| File | Location |\n|---|---|", "| pkg/conn.py | 9999 |", (9999, 9999)),
        ("| File | Where |\n|---|---|", "| pkg/conn.py | :9999 |", (9999, 9999)),
        ("| File | Line |\n|:-|-:|", "| `pkg/conn.py` | `L9999` |", (9999, 9999)),
    ],
)
def test_a_line_in_a_table_cell_of_its_own_is_the_rows_line(
    head: str, cells: str, lines: tuple[int, int], repo: Path
) -> None:
    assert located(f"{head}\n{cells}", repo) == [("pkg/conn.py", *lines, "hallucinated")]
    real = cells.replace("9999", "3")
    assert [s for *_, s in located(f"{head}\n{real}", repo)] == ["grounded"]


def test_a_position_column_that_holds_words_reads_no_line(repo: Path) -> None:
    prose = "| File | Where |\n|---|---|\n| pkg/conn.py | in send() for HTTP/1.1 |"
    assert located(prose, repo) == [("pkg/conn.py", None, None, "grounded")]


@pytest.mark.parametrize(
    ("link", "ref"),
    [
        ("https://github.com/o/r/blob/main/pkg/conn.py#L{n}", "main"),
        ("https://github.com/o/r/blob/v1.2.0/pkg/conn.py#L{n}", "v1.2.0"),
        ("https://github.com/o/r/blob/feature/x/pkg/conn.py#L{n}", "feature/x"),
        ("https://gitlab.com/g/sub/r/-/blob/main/pkg/conn.py#L{n}", "main"),
        ("https://codeberg.org/o/r/src/branch/main/pkg/conn.py#L{n}", "main"),
        ("[conn.py](https://github.com/o/r/blob/main/pkg/conn.py#L{n})", "main"),
    ],
)
def test_a_link_at_a_branch_or_tag_is_checked_at_the_pinned_commit_with_its_ref_named(
    link: str, ref: str, repo: Path
) -> None:
    (bad,) = verify(extract(link.format(n=9999)), repo)
    (good,) = verify(extract(link.format(n=3)), repo)
    assert (bad.path, bad.line_start, bad.status) == ("pkg/conn.py", 9999, "hallucinated")
    assert (good.path, good.line_start, good.status) == ("pkg/conn.py", 3, "grounded")
    for citation in (bad, good):
        assert f"linked at `{ref}`, checked at the pinned commit" in citation.detail


def test_the_set_is_about_a_file_of_eleven_lines() -> None:
    assert len(FILE.splitlines()) == 11
