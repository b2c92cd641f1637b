"""Untrusted text made safe to look at: every character that would act instead of show (a
terminal control, a direction override) or that shows nothing a reader can see (a zero-width
or other invisible character, a blank that is not a space) is written as its escape, so
`safe\u202eexe.txt` reads as that, not as `safe…txt.exe`, and `read_file\u3164` is not taken
for `read_file`. One rule for every place that shows what a model, a server or a user wrote:
the explorer's pages and terminal lines, `farm report` in every medium a person reads, and
the closing report of `farm run` (`visible_fields` walks a whole scorecard)."""

from __future__ import annotations

import re
import unicodedata
from typing import Any, TypeVar

from pydantic import BaseModel

HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Zs", "Cs", "Co", "Cn"})
"""Controls, format characters (direction marks and overrides, zero-width joiners and spaces,
tag characters, the byte-order mark, the soft hyphen), line and paragraph separators, blanks
(every space character but the ASCII space: no-break, en, em, figure, ideographic…),
surrogates, private-use and unassigned code points: none has a glyph of its own a reader can
rely on."""

IGNORABLE = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors
    (0x2800, 0x2800),  # braille pattern blank: a letter-like blank
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),  # reserved specials
    (0xE0000, 0xE0FFF),  # tags, variation selectors supplement, and the rest of the plane
)
"""Invisible characters of other categories (letters, marks): Unicode's default-ignorable code
points that are not format characters (Other_Default_Ignorable_Code_Point and
Variation_Selector in DerivedCoreProperties.txt), and the blank braille pattern. A font draws
each as nothing, or as a blank a reader takes for no character at all."""

KEPT = frozenset("\n\t ")
"""Newline and tab keep their meaning: they lay out a transcript, and neither hides text; the
ASCII space is the one blank everyone reads as one."""


def hidden(ch: str) -> bool:
    """Whether the character `ch` would act, or show as nothing (or a blank), instead of as
    itself."""
    if ch in KEPT:
        return False
    if unicodedata.category(ch) in HIDDEN_CATEGORIES:
        return True
    code = ord(ch)
    return any(low <= code <= high for low, high in IGNORABLE)


CANDIDATE = re.compile(r"[^\x20-\x7e\n\t]")
"""Every character but printable ASCII, newline and tab: the few that may hide are among these,
and checking them one by one costs nothing for the rest."""


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: str) -> str:
    """`text` with each hidden character written as its escape (`\\x1b`, `\\u202e`,
    `\\u3164`, `\\U000e0041`); every other character, newline and tab included, unchanged."""
    return CANDIDATE.sub(lambda m: _escape(m[0]) if hidden(m[0]) else m[0], text)


Model = TypeVar("Model", bound=BaseModel)


def _shown(value: Any) -> Any:
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {_shown(k): _shown(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_shown(v) for v in value]
    return value


def visible_fields(model: Model) -> Model:
    """A copy of `model` with every text in it (fields, dictionary keys, list items, at any
    depth) made `visible`: a report renders this copy, so no name or note it prints, in a
    table or a chart's label, can hide; the stored card is unchanged."""
    return type(model).model_validate(_shown(model.model_dump()))
