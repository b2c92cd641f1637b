"""Which line-like tokens of an answer belong to which cited path, decided per sentence.

A token no citation's own text read (`line 999`, `L12`, `line XII`) belongs to the nearest path
in its sentence; in a sentence that names no path, to the nearest path of the sentence right
before it in the same paragraph (`See pkg/a.py. The loop is at line 12.`). A `#12` counts only
beside its path (it is an issue or pull request as often as a line; see `lines.beside`).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from mcp_farm.workers.answer.lines import LINE_LIKE, Lines, numbers

SENTENCE_END = re.compile(
    r"(?<!\bno)(?<!\bnos)(?<!\bnum)(?<!\bl)(?<!\bll)(?<!\bln)(?<!\bcf)(?<!\bsee)(?<!\bapprox)[.!?]\s"
    r"|\n\s*(?:\n|[-*+>#|]|\d+[.)]\s)"
)
"""Where a sentence ends: a stop (not the stop of `no.`, `l.`, `cf.`, …), a blank line, or a new
list item, quote, heading or table row (a `;` does not part a path from its line)."""


@dataclass(frozen=True)
class Written:
    """One citation as found: where its path stands and where all it wrote spans."""

    path: tuple[int, int]
    text: tuple[int, int]


@dataclass(frozen=True)
class _Sentence:
    start: int
    end: int
    after_stop: bool
    """Whether a sentence stop (not a paragraph or item break) ends the sentence before it."""


def _sentences(prose: str) -> list[_Sentence]:
    out: list[_Sentence] = []
    start, after_stop = 0, False
    for m in SENTENCE_END.finditer(prose):
        out.append(_Sentence(start, m.end(), after_stop))
        start, after_stop = m.end(), "\n" not in m.group()
    out.append(_Sentence(start, len(prose), after_stop))
    return out


def _nearest(spans: list[tuple[int, tuple[int, int]]], at: tuple[int, int]) -> int:
    """The index of the path nearest to the token at `at`."""
    return min(spans, key=lambda s: max(s[1][0] - at[1], at[0] - s[1][1], 0))[0]


def claimed(prose: str, cited: list[Written]) -> dict[int, list[Lines]]:
    """Per citation (by index), the lines its sentence claims for it beyond its own text."""
    sentences = _sentences(prose)
    starts = [s.start for s in sentences]
    by_sentence: dict[int, list[tuple[int, tuple[int, int]]]] = {}
    for k, c in enumerate(cited):
        by_sentence.setdefault(bisect.bisect_right(starts, c.path[0]) - 1, []).append((k, c.path))
    out: dict[int, list[Lines]] = {}
    for token in LINE_LIKE.finditer(prose):
        span = token.span()
        if token.group().startswith("#") or any(
            c.text[0] < span[1] and span[0] < c.text[1] for c in cited
        ):
            continue
        at = bisect.bisect_right(starts, span[0]) - 1
        paths = by_sentence.get(at)
        if paths is None and at > 0 and sentences[at].after_stop:
            paths = by_sentence.get(at - 1)
        if paths is None:
            continue
        read = numbers(prose, span[0])
        if read is None or read.bad is not None:
            read = Lines(span[1], bad=token.group())
        out.setdefault(_nearest(paths, span), []).append(read)
    return out
