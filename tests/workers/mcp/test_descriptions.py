"""The `descriptions` levels' rewrites: a paraphrase that changes what it can and keeps verbatim
what must be kept, and a swap drawn by the trial's seed."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from mcp_farm.workers.mcp.describe import ANYWHERE, LEADING, paraphrase, swapped, verbatim
from mcp_farm.workers.model.toolspec import ToolSpec

CATALOG = Path("scenarios/fixtures/distractors/catalog.json")
"""Every bundled server's tools as listed (docs/robustness.md)."""


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ('List the files of a folder (e.g. "/Desktop"). Sizes are in bytes.', ['e.g. "/Desktop"']),
        ("Asks through elicitation/create. Create a note.", ["elicitation/create"]),
        (
            "Read a page. See https://example.com/list/read for more.",
            ["https://example.com/list/read"],
        ),
        ("Create it with `create_note --list`. Delete the rest.", ["`create_note --list`"]),
        ("List events from 2026-03-10 at 15:00, at most 300.", ["2026-03-10", "15:00", "300"]),
        ("Read a file by its id, i.e. msg-1040. Search the notes.", ["i.e. msg-1040"]),
        ("Search the SQLite DB with a SELECT; returns JSON rows.", ["SQLite", "SELECT", "JSON"]),
        ("Use the 'head' parameter to read only the first N lines.", ["'head'"]),
        (
            "Each entry shows [FILE] or [DIR] and its readOnlyHint.",
            ["[FILE]", "[DIR]", "readOnlyHint"],
        ),
    ],
)
def test_a_paraphrase_keeps_what_must_be_kept_verbatim(text: str, kept: list[str]) -> None:
    new = paraphrase(text)
    assert _words(new) != _words(text)
    for span in kept:
        assert span in new, (span, new)


def test_a_method_name_keeps_its_verb_and_an_abbreviation_splits_no_sentence() -> None:
    new = paraphrase("Delete a file; the server asks through elicitation/create, e.g. Yes. Done.")
    assert "elicitation/create" in new and "/make" not in new
    # Two sentences only: "e.g." is no sentence end, so "e.g. Yes." stays in its sentence.
    assert new == "Done. Remove a file; the server asks through elicitation/create, e.g. Yes."


def test_a_verb_is_reworded_where_a_verb_stands_and_a_noun_is_left_alone() -> None:
    new = paraphrase(
        "Search the list of the search engine's results; give `tag` to list only some."
    )
    assert (
        new == "Look through the list of the search engine's results; give `tag` to show only some."
    )


def test_a_reworded_word_gets_the_article_its_first_letter_asks_for() -> None:
    assert paraphrase("Copy a whole folder.") == "Duplicate an entire directory."
    assert paraphrase("Open an entire page.") == "Load a whole page."


def test_a_list_keeps_its_lines_and_their_order() -> None:
    text = "Read the notes.\n\nArgs:\n    path: the folder to list\n    depth: how deep"
    assert paraphrase(text) == (
        "Open and read the notes.\n\nArgs:\n    path: the directory to show\n    depth: how deep"
    )


def test_a_last_sentence_without_a_full_stop_gets_one_when_it_moves_first() -> None:
    new = paraphrase("Create new relations in the graph. Relations should be in active voice")
    assert new == "Relations should be in active voice. Make fresh relations in the graph."


def test_a_noun_phrase_description_is_read_as_what_the_tool_gives_back() -> None:
    assert paraphrase("The meeting rooms, with today's bookings.") == (
        "Gives back the meeting rooms, with today's bookings."
    )
    # A sentence of its own is not a noun phrase: it is left as it was.
    assert paraphrase("The snapshot was taken then.") == "The snapshot was taken then."


def test_every_bundled_description_is_changed_and_keeps_its_verbatim_spans_and_numbers() -> None:
    texts = {t["description"] for t in json.loads(CATALOG.read_text(encoding="utf-8"))}
    for text in sorted(texts):
        new = paraphrase(text)
        assert paraphrase(text) == new  # deterministic
        assert _words(new) != _words(text), text
        for span in verbatim(text):
            assert new.count(span) >= text.count(span), (span, new)
        assert sorted(re.findall(r"\d+", new)) == sorted(re.findall(r"\d+", text)), new


def test_every_rewording_is_plain_words_and_no_word_is_reworded_into_itself() -> None:
    for table in (LEADING, ANYWHERE):
        for old, new in table.items():
            assert re.fullmatch(r"[a-z' ]+|[A-Za-z' -]+", new) and old != new, (old, new)


def _tool(name: str, server: str = "s") -> ToolSpec:
    return ToolSpec(
        shown_name=name, server=server, tool=name, description=f"What {name} does.", input_schema={}
    )


OWN = [_tool(f"own_{i}") for i in range(5)]


def _pair(listed: list[ToolSpec], own: list[ToolSpec], seed: int) -> list[str]:
    out = swapped(listed, own, random.Random(seed))
    return [t.tool for t, was in zip(out, listed, strict=True) if t.description != was.description]


def test_the_swapped_pair_is_drawn_by_the_seed_and_the_same_seed_draws_the_same() -> None:
    pairs = {tuple(_pair(OWN, OWN, seed)) for seed in range(20)}
    assert len(pairs) > 3
    assert all(len(p) == 2 for p in pairs)
    assert _pair(OWN, OWN, 7) == _pair(OWN, OWN, 7)
    out = swapped(OWN, OWN, random.Random(7))
    first, second = (OWN.index(t) for t in OWN if t.tool in _pair(OWN, OWN, 7))
    assert out[first].description == OWN[second].description
    assert out[second].description == OWN[first].description


def test_one_own_tool_swaps_with_a_distractor_and_alone_keeps_its_description() -> None:
    distractors = [_tool(f"other_{i}", "distractors") for i in range(3)]
    listed = [distractors[0], OWN[0], *distractors[1:]]
    pair = _pair(listed, OWN[:1], 1)
    assert "own_0" in pair and len(pair) == 2
    assert swapped(OWN[:1], OWN[:1], random.Random(1)) == OWN[:1]
