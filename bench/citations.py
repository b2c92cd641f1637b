"""The grounding's precision and recall on a labelled set of citations, one per written form.

    .venv/bin/python -m bench.citations

Every form docs/answer-quality.md lists (and the outside forms issue 43 found: an editor's
code-fence header `3600:3610:path`, `ll. 148–2120`, superscript digits, a line in a Markdown
table cell of its own, links at a branch or tag) is written twice about one small file
(`pkg/conn.py`, 11 lines): once at a line the file has, labelled real, and once at one it does
not (or in a way no one can check), labelled impossible. A few forms have only one side (a line
in superscript is never real; a footnote mark after a path is a real citation of the file).
Precision is the share of `grounded` verdicts that are real, recall the share of real
citations graded `grounded` (one that is not even found counts as missed). The test
(tests/workers/answer/test_citation_set.py) holds both at 1, and docs/answer-quality.md
quotes the numbers this prints.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from mcp_farm.workers.answer import extract, verify

SHA = "f40c9c3" * 5 + "f40c9"
FILE = """class Connection:
    def send(self, data):
        return self._write(data)

    def _write(self, data):
        return len(data)


class Other:
    def send(self, data):
        return None
"""
REAL, IMPOSSIBLE = 3, 9999
"""The line written in a real citation, and in an impossible one (the file has 11)."""
FORMS = [
    # after the path
    "pkg/conn.py:{n}",
    "pkg/conn.py: {n}",
    "**pkg/conn.py**:{n}",
    'File "pkg/conn.py", line {n}',
    "pkg/conn.py, line #{n}",
    "pkg/conn.py around line {n}",
    "pkg/conn.py:~{n}",
    "pkg/conn.py: ~line {n}",
    "pkg/conn.py (line ≈{n})",
    "pkg/conn.py#L2-L{n}",
    "pkg/conn.py (L{n})",
    "pkg/conn.py (see L{n})",
    "pkg/conn.py – line {n}",
    "pkg/conn.py → line {n}",
    "pkg/conn.py | line {n}",
    "pkg/conn.py @ line {n}",
    "pkg/conn.py [line {n}]",
    "pkg/conn.py, lines 2 to {n}",
    "pkg/conn.py, lines 1, {n} and 2",
    "pkg/conn.py, lines 2; {n}",
    "pkg/conn.py {n}",
    "`pkg/conn.py`: at line {n}",
    "pkg/conn.py, l. {n}",
    "pkg/conn.py, ll. 2–{n}",
    "pkg/conn.py@f40c9c3:{n}",
    "pkg/conn.py?plain=1#L{n}",
    "pkg/conn.py:2\u2011{n}",
    # before the path
    "line {n} of pkg/conn.py",
    "lines 2-{n} in the file pkg/conn.py",
    "at line {n} in pkg/conn.py",
    # an editor's code fence
    "```2:{n}:pkg/conn.py\nreturn self._write(data)\n```",
    "```python:{n}:{n}:pkg/conn.py\nreturn 1\n```",
    # Markdown tables
    "| File | Line |\n|---|---|\n| pkg/conn.py | {n} |",
    "| File | Line |\n|:-|-:|\n| `pkg/conn.py` | `L{n}` |",
    "| File | Lines (approx.) |\n|---|---|\n| pkg/conn.py | 2–{n} |",
    "| File | Start line | End line |\n|---|---|---|\n| pkg/conn.py | 2 | {n} |",
    "| File | Location |\n|---|---|\n| pkg/conn.py | {n} |",
    "| File | Where |\n|---|---|\n| pkg/conn.py | :{n} |",
    # beside the path, and given by the sentence
    "pkg/conn.py: `_write` (line {n})",
    "pkg/conn.py :: line {n}",
    "line {n} — pkg/conn.py",
    "The send path is pkg/conn.py. The write happens at line {n}.",
    "pkg/conn.py:2 calls it, and the write itself is at line {n}.",
    # a compiler's message
    "pkg/conn.py({n}): error C2065",
    "pkg/conn.py({n},5): warning",
    # repository links: at a full hash, a branch, a tag
    f"https://github.com/o/r/blob/{SHA}/pkg/conn.py#L{{n}}",
    f"[conn.py](https://github.com/o/r/blob/{SHA}/pkg/conn.py#L{{n}})",
    f"see https://git.example.org/o/r/-/blob/{SHA}/pkg/conn.py#L2-L{{n}}.",
    "https://github.com/o/r/blob/main/pkg/conn.py#L{n}",
    "https://github.com/o/r/blob/v1.2.0/pkg/conn.py#L{n}",
    "https://github.com/o/r/blob/feature/x/pkg/conn.py#L2-L{n}",
    "https://gitlab.com/g/r/-/blob/main/pkg/conn.py#L{n}",
    "https://codeberg.org/o/r/src/branch/main/pkg/conn.py#L{n}",
    "[conn.py](https://github.com/o/r/blob/main/pkg/conn.py#L{n})",
]
"""Each form, written once at REAL and once at IMPOSSIBLE."""
ONE_SIDED = [
    ("pkg/conn.py:\u00b2", False),
    ("pkg/conn.py line \u2079\u2079\u2079", False),
    ("pkg/conn.py\u00b2\u00b3\u2074", False),
    ("pkg/conn.py:\u2083", False),
    ("pkg/conn.py:3a", False),
    ("pkg/conn.py:-3", False),
    ("pkg/conn.py:[3]", False),
    ("pkg/conn.py, line XII", False),
    ("pkg/conn.py (#3)", False),
    ("pkg/conn.py:12345678901", False),
    ("```3600:3610:pkg/conn.py\nreturn 1\n```", False),
    ("see pkg/conn.py, ll. 148\u20132120.", False),
    ("| File | Line |\n|---|---|\n| pkg/conn.py | 3?x |", False),
    ("see pkg/conn.py\u00b2 for the class.", True),
    ("see pkg/conn.py", True),
    ("https://raw.githubusercontent.com/o/r/main/pkg/conn.py", True),
    ("pkg/conn.py:2, 3 more callers", True),
]
"""Forms with one side only: (prose, whether its one citation is real)."""


@dataclass(frozen=True)
class Labelled:
    prose: str
    real: bool


@dataclass(frozen=True)
class Measured:
    """The verdicts on the labelled set."""

    citations: int
    true_grounded: int
    false_grounded: int
    missed: list[str]
    """The prose of each real citation not graded `grounded` (or not found)."""
    wrongly_grounded: list[str]
    """The prose of each impossible citation graded `grounded`."""

    @property
    def precision(self) -> float:
        grounded = self.true_grounded + self.false_grounded
        return self.true_grounded / grounded if grounded else 1.0

    @property
    def recall(self) -> float:
        real = self.true_grounded + len(self.missed)
        return self.true_grounded / real if real else 1.0


def labelled() -> list[Labelled]:
    """The whole set: every form at a real and at an impossible line, then the one-sided."""
    both = [Labelled(form.format(n=n), n == REAL) for form in FORMS for n in (REAL, IMPOSSIBLE)]
    return both + [Labelled(prose, real) for prose, real in ONE_SIDED]


def measure(repo: Path) -> Measured:
    """Grade every labelled citation against `repo` (which holds pkg/conn.py)."""
    true_grounded = false_grounded = 0
    missed: list[str] = []
    wrongly: list[str] = []
    items = labelled()
    for item in items:
        verdicts = [c.status for c in verify(extract(item.prose), repo, tolerance=1)]
        grounded = bool(verdicts) and all(v == "grounded" for v in verdicts)
        if item.real and grounded:
            true_grounded += 1
        elif item.real:
            missed.append(item.prose)
        elif any(v == "grounded" for v in verdicts):
            false_grounded += 1
            wrongly.append(item.prose)
    return Measured(len(items), true_grounded, false_grounded, missed, wrongly)


def write_repo(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "pkg" / "conn.py").write_text(FILE, encoding="utf-8")
    return root


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        found = measure(write_repo(Path(folder)))
    print(
        f"{found.citations} labelled citations ({len(FORMS)} forms at a real and an impossible "
        f"line, {len(ONE_SIDED)} one-sided): precision {found.precision:.3f} "
        f"({found.false_grounded} impossible graded grounded), recall {found.recall:.3f} "
        f"({len(found.missed)} real not grounded)"
    )
    for prose in found.wrongly_grounded:
        print(f"  grounded but impossible: {prose!r}")
    for prose in found.missed:
        print(f"  real but not grounded: {prose!r}")


if __name__ == "__main__":
    main()
