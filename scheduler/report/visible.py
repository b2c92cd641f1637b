"""Untrusted text made safe to look at: every character that would act instead of show (a
terminal control, a direction override, a zero-width or other invisible format character) is
written as its escape, so `safe\u202eexe.txt` reads as that, not as `safe…txt.exe`."""

from __future__ import annotations

import re
import unicodedata

HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
"""Controls, format characters (direction marks and overrides, zero-width joiners and spaces,
tag characters, the byte-order mark), line and paragraph separators, surrogates, private-use
and unassigned code points: none has a glyph of its own a reader can rely on."""

KEPT = frozenset("\n\t")
"""Newline and tab keep their meaning: they lay out a transcript, and neither hides text."""


def _hidden(ch: str) -> bool:
    return ch not in KEPT and unicodedata.category(ch) in HIDDEN_CATEGORIES


CANDIDATE = re.compile(r"[^\x20-\x7e\n\t]")
"""Every character but printable ASCII, newline and tab: the few that may hide are among these,
and checking their category one by one costs nothing at import."""


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str) -> str:
    """`text` with each hidden character written as its escape (`\\x1b`, `\\u202e`,
    `\\U000e0041`); every other character, newline and tab included, unchanged."""
    return CANDIDATE.sub(lambda m: _escape(m[0]) if _hidden(m[0]) else m[0], text)
