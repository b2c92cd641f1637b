"""Hidden characters are shown, everything else is left alone: one function for the explorer's
pages, its terminal output, the CLI's error line and every report a person reads."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_farm.scheduler.report.visible import hidden, visible
from mcp_farm.scheduler.view.html import e
from mcp_farm.scheduler.view.terminal import shown

INVISIBLE = (
    "\u3164\u034f\ufe0f\ufe00\u115f\u1160\uffa0\u2800\u180b\u17b4\U000e0100"
    "\u00a0\u2007\u3000\u202f\u00ad\u2060\u061c\u200b\u200d\ufeff\u202e\u2066\U000e0041"
)
"""Fillers, joiners, variation selectors, blanks that are not the space, format characters:
each looks like nothing (or like a space) beside a name."""
ESCAPE = re.compile(r"\\x[0-9a-f]{2}|\\u[0-9a-f]{4}|\\U[0-9a-f]{8}")

texts = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(INVISIBLE + "\x1b\n\t é😀"))


@given(texts)
def test_no_hidden_character_survives_and_the_rest_is_kept_in_order(text: str) -> None:
    out = visible(text)
    assert not any(hidden(c) for c in out)
    assert not any(hidden(c) for c in e(text)) and not any(hidden(c) for c in shown(text))
    if not any(hidden(c) for c in text):
        assert out == text
    if "\\" not in text:
        # Every escape names the character it replaced: undone, it gives the text back.
        undone = ESCAPE.sub(lambda m: chr(int(m[0][2:], 16)), out)
        assert undone == text


@given(st.characters(codec="utf-8"))
def test_the_rule_follows_the_unicode_categories(ch: str) -> None:
    category = unicodedata.category(ch)
    if category in {"Cc", "Cf", "Zl", "Zp", "Co", "Cn", "Cs"} and ch not in "\n\t":
        assert hidden(ch)
    if category == "Zs":
        assert hidden(ch) == (ch != " ")
    if category[0] in "LNPS" and ch not in "\u3164\u115f\u1160\uffa0\u2800":
        # Letters, digits, punctuation and symbols show as themselves.
        assert not hidden(ch), f"U+{ord(ch):04X}"


@pytest.mark.parametrize("ch", list(INVISIBLE), ids=lambda c: f"U+{ord(c):04X}")
def test_every_known_invisible_character_is_escaped(ch: str) -> None:
    assert visible(f"read_file{ch}") == f"read_file{visible(ch)}" != f"read_file{ch}"
    assert ESCAPE.fullmatch(visible(ch))


def test_a_direction_override_reads_as_written() -> None:
    assert visible("safe\u202eexe.txt") == "safe\\u202eexe.txt"
    assert visible("read_file\u3164") == "read_file\\u3164"
    assert (
        visible("a\u200bb\x1b[2J\U000e0041\n\tc é 😀") == "a\\u200bb\\x1b[2J\\U000e0041\n\tc é 😀"
    )
    # Combining accents that show (é written as e and U+0301) are kept.
    assert visible("e\u0301") == "e\u0301"
