"""Keyword coverage of an answer's prose.

A keyword matches case-insensitively and as a whole word: where the keyword starts (or ends)
with a word character, the prose must not continue the word there, so `send` misses `sender`
and `_send` but finds `Connection.send` and `send()`. Punctuation inside a keyword is literal
(`Connection.send`, `Content-Length`, `b""`), and a run of spaces in it matches any run of
whitespace, because prose is wrapped. `a|b` accepts either alternative.
"""

from __future__ import annotations

import re
from functools import lru_cache


def found(prose: str, keywords: list[str]) -> list[bool]:
    """For each keyword, whether the prose mentions it (one of its alternatives)."""
    return [any(p.search(prose) for p in _patterns(k)) for k in keywords]


def coverage(prose: str, keywords: list[str]) -> float | None:
    """Share of `keywords` the prose mentions, in [0, 1]; None when there are none."""
    if not keywords:
        return None
    hits = found(prose, keywords)
    return sum(hits) / len(hits)


@lru_cache(maxsize=512)
def _patterns(keyword: str) -> tuple[re.Pattern[str], ...]:
    # An empty alternative (`a|`) would match everywhere; it is dropped instead.
    words = [w.strip() for w in keyword.split("|")]
    return tuple(_pattern(w) for w in words if w)


def _pattern(word: str) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(part) for part in word.split())
    start = r"(?<!\w)" if re.match(r"\w", word) else ""
    end = r"(?!\w)" if re.search(r"\w\Z", word) else ""
    return re.compile(start + body + end, re.IGNORECASE)
