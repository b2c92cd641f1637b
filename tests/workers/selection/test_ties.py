"""Selection beyond the ranking: stop words, ties broken by the trial's seed and reported, the
expected tools' ranks, its time kept off the scenario's clock, and a time limit."""

from __future__ import annotations

import math

import anyio
import pytest

from mcp_farm.schema.specs import Selection
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.model.toolspec import ToolSpec
from mcp_farm.workers.selection import Selector
from mcp_farm.workers.selection.bm25 import bm25_ranks


def _tool(name: str, description: str = "") -> ToolSpec:
    return ToolSpec(
        shown_name=name, server="s", tool=name, description=description, input_schema={}
    )


def test_stop_words_match_no_tool() -> None:
    tools = [
        _tool("what_is_in", "What is in it: the one that is in the list."),
        _tool("list_directory", "List the entries of a folder."),
    ]
    scores = bm25_ranks("what is in the folder", tools)
    assert scores[1] > scores[0] == 0.0


BLANK = [_tool(f"tool_{i}") for i in range(8)]
"""Tools no message matches: every score is 0, a tie all the way down."""


def _chosen(seed: int, k: int = 2) -> tuple[list[str], Selector]:
    selector = Selector(Selection(method="bm25", k=k), {t.shown_name: t for t in BLANK}, seed=seed)
    kept = anyio.run(selector.select, "book a flight", ["tool_5"])
    return list(kept), selector


def test_a_tie_is_broken_by_the_seed_not_the_list_order_and_reported() -> None:
    picks = {tuple(_chosen(seed)[0]) for seed in range(12)}
    assert len(picks) > 3  # the list's order would give ("tool_0", "tool_1") every time
    again, selector = _chosen(4)
    assert again == _chosen(4)[0]
    (turn,) = selector.turns
    assert turn.tied is True
    assert turn.ranks[0] is not None and 1 <= turn.ranks[0] <= len(BLANK)
    assert turn.recall == (1.0 if "tool_5" in again else 0.0)
    assert (turn.ranks[0] <= 2) is ("tool_5" in again)


def test_a_selection_no_tie_decided_says_so_and_ranks_each_expected_tool() -> None:
    tools = [
        _tool("send_email", "Send an email."),
        _tool("read_file", "Read a text file."),
        _tool("list_directory", "List a folder."),
    ]
    selector = Selector(Selection(method="bm25", k=1), {t.shown_name: t for t in tools}, seed=1)
    kept = anyio.run(selector.select, "read the file", ["read_file", "list_directory", "gone"])
    assert list(kept) == ["read_file"]
    (turn,) = selector.turns
    assert turn.tied is False
    assert turn.ranks[0] == 1 and turn.ranks[1] in (2, 3) and turn.ranks[2] is None
    assert turn.recall == pytest.approx(1 / 3)


class _Watching:
    """A ranker that notes the scenario clock's deadline while it ranks."""

    def __init__(self, clock: anyio.CancelScope) -> None:
        self.clock = clock
        self.deadline = 0.0

    async def scores(self, query: str, tools: list[ToolSpec]) -> list[float]:
        self.deadline = self.clock.deadline
        return [0.0 for _ in tools]


def test_selection_runs_outside_the_scenario_clock_and_its_time_is_recorded() -> None:
    async def run() -> tuple[float, float, float, Selector]:
        with anyio.CancelScope(deadline=anyio.current_time() + 1000) as clock:
            before = clock.deadline
            ranker = _Watching(clock)
            selector = Selector(
                Selection(method="bm25", k=2),
                {t.shown_name: t for t in BLANK},
                ranker=ranker,
                clock=clock,
            )
            await selector.select("anything", [])
        return before, ranker.deadline, clock.deadline, selector

    before, during, after, selector = anyio.run(run)
    assert during == math.inf
    assert after >= before
    assert selector.turns[0].seconds >= 0 and selector.seconds == selector.turns[0].seconds


class _Hung:
    async def scores(self, query: str, tools: list[ToolSpec]) -> list[float]:
        await anyio.Event().wait()
        return []


def test_a_selector_past_its_time_limit_is_an_infrastructure_error_naming_it() -> None:
    how = Selection(method="bm25", k=2, timeout_s=0.05)
    selector = Selector(how, {t.shown_name: t for t in BLANK}, ranker=_Hung())
    with pytest.raises(InfraError, match=r"tool selection \(bm25\) took more than 0\.05 s"):
        anyio.run(selector.select, "anything", ["tool_1"])
    assert selector.turns == []
