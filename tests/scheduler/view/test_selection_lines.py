"""What a trial's tool selection held, on the explorer's trial page and in `farm trial show`:
a line per user message, and whose failure a failed trial was, as the scorecard counts it."""

from __future__ import annotations

import json
from types import SimpleNamespace

from mcp_farm.scheduler.view.transcript import selection_lines
from mcp_farm.scheduler.view.trial_page import _selection_html


def _trial(recall: list[float | None] | None, outcome: str | None) -> SimpleNamespace:
    provenance = {"host": "h"} | ({} if recall is None else {"selection_recall": recall})
    return SimpleNamespace(provenance_json=json.dumps(provenance), outcome=outcome)


def test_a_failed_trial_whose_selection_missed_a_tool_is_the_selectors() -> None:
    lines = selection_lines(_trial([1.0, 0.5, None], "wrong_tool"))
    assert lines == [
        "user message 1: the selection held 100% of its tools",
        "user message 2: the selection held 50% of its tools",
        "user message 3: called for no tool",
        "failed: the selector missed a tool it was called for",
    ]


def test_a_failed_trial_with_every_tool_shown_is_the_models() -> None:
    assert selection_lines(_trial([1.0], "wrong_params"))[-1] == (
        "failed: the model's failure, with the tools shown"
    )


def test_a_passed_trial_says_no_whose_failure() -> None:
    assert selection_lines(_trial([1.0], "pass")) == [
        "user message 1: the selection held 100% of its tools"
    ]


def test_a_trial_without_selection_shows_no_section() -> None:
    assert selection_lines(_trial(None, "wrong_tool")) == []
    assert _selection_html(_trial(None, "wrong_tool")) == ""
    assert _selection_html(_trial([0.0], "wrong_tool")).startswith("<h2>Tool selection</h2>")


def test_a_recorded_selection_says_whether_a_tie_decided_it_and_its_time() -> None:
    turns = [
        {"recall": 1.0, "tied": True, "ranks": [3], "seconds": 0.25},
        {"recall": None, "tied": False, "ranks": [], "seconds": 0.5},
    ]
    provenance = {"selection_recall": [1.0, None], "selections": turns}
    trial = SimpleNamespace(provenance_json=json.dumps(provenance), outcome="pass")
    assert selection_lines(trial) == [
        "user message 1: the selection held 100% of its tools; a score tie decided it "
        "(broken by the seed); 0.25 s",
        "user message 2: called for no tool; 0.5 s",
    ]
