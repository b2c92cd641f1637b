"""Hidden characters are shown, everything else is left alone: one function for the explorer's
pages, its terminal output and the CLI's error line."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from mcp_farm.scheduler.report.visible import HIDDEN_CATEGORIES, visible
from mcp_farm.scheduler.view.html import e
from mcp_farm.scheduler.view.terminal import shown


def hidden(text: str) -> list[str]:
    return [c for c in text if c not in "\n\t" and unicodedata.category(c) in HIDDEN_CATEGORIES]


@given(
    st.text(
        alphabet=st.characters(codec="utf-8")
        | st.sampled_from("\u202e\u2066\u200b\x1b\ufeff\U000e0041")
    )
)
def test_no_hidden_character_survives_and_the_rest_is_kept_in_order(text: str) -> None:
    out = visible(text)
    assert hidden(out) == []
    assert hidden(e(text)) == [] and hidden(shown(text)) == []
    # Remove the escapes of what was hidden: what is left is the text without it.
    kept = "".join(c for c in text if not hidden(c))
    if not hidden(text):
        assert out == text
    assert len(out) >= len(kept)


def test_a_direction_override_reads_as_written() -> None:
    assert visible("safe\u202eexe.txt") == "safe\\u202eexe.txt"
    assert (
        visible("a\u200bb\x1b[2J\U000e0041\n\tc é 😀") == "a\\u200bb\\x1b[2J\\U000e0041\n\tc é 😀"
    )
