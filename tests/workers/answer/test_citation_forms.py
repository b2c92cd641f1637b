"""Citation forms that once lost their line, and the lenient cases, each decided (the
decisions are listed in docs/answer-quality.md, "Citation grounding")."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    ],
)
def test_a_line_past_the_end_is_never_grounded_whatever_the_form(prose: str, repo: Path) -> None:
    assert statuses(prose, repo) == ["hallucinated"]


@pytest.mark.parametrize(
    ("prose", "line"),
    [("`pkg/conn.py`:2", 2), ("`pkg/conn.py` (line 5)", 5), ("pkg/conn.py, line 6", 6)],
)
def test_the_same_forms_keep_their_line_when_it_exists(prose: str, line: int, repo: Path) -> None:
    (ref,) = extract(prose)
    assert (ref.path, ref.line_start) == ("pkg/conn.py", line)
    assert statuses(prose, repo) == ["grounded"]


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
