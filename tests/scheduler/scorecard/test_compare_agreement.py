"""`farm compare`'s word and interval agree by construction (issue 43, item 12): the verdict
reads the interval the test used, at the level Holm tested the cell at, unclipped, and the
interval as printed keeps each end on its side of 0."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_farm.scheduler.scorecard.compare import ALPHA, CellKey, Clusters, compared, points
from mcp_farm.scheduler.statistics.rates import MIN_CLUSTERS

SIGNIFICANT = {"regression", "improvement", "changed"}
Side = dict[CellKey, Clusters]


@st.composite
def cells(draw: st.DrawFn) -> tuple[Side, Side]:
    """One kind of cell, one to four cells, each over 1..8 scenarios (pooled and clustered
    cells both), with any trials and passes a side."""
    left: Side = {}
    right: Side = {}
    for c in range(draw(st.integers(1, 4))):
        scenarios = draw(st.integers(1, MIN_CLUSTERS + 3))
        for side in (left, right):
            counts: Clusters = {}
            for s in range(scenarios):
                n = draw(st.integers(1, 12))
                counts[f"s{s}"] = (n, draw(st.integers(0, n)))
            side[("tool", f"cell{c}")] = counts
    return left, right


def _ends(text: str) -> tuple[float, float]:
    low, high = re.fullmatch(r"(\S+)…(\S+) at [\d.]+%", text).groups()  # type: ignore[union-attr]
    return float(low), float(high)


@settings(max_examples=300, deadline=None)
@given(cells(), st.sampled_from(["tool", "wrong_state", "other_path"]))
def test_the_verdict_and_the_printed_interval_never_disagree(
    sides: tuple[Side, Side], dimension: str
) -> None:
    left, right = sides
    for cell in compared(dimension, left, right):
        excludes = cell.diff.low > 0 or cell.diff.high < 0
        assert cell.significant == excludes
        assert (cell.verdict in SIGNIFICANT) == excludes, (cell.verdict, cell.diff)
        low, high = _ends(cell.interval_text)
        assert (low > 0 or high < 0) == excludes, (cell.interval_text, cell.diff)
        if cell.verdict == "same":
            assert cell.diff.low >= -0.1 and cell.diff.high <= 0.1
        # The interval is the test's own: it excludes 0 as its p-value is below its level
        # (the adjusted p-value below ALPHA), up to the bisection that finds its ends.
        if abs(cell.diff.p - cell.alpha) > 1e-9:
            assert excludes == (cell.diff.p < cell.alpha), (cell.diff, cell.alpha)
        if abs(cell.p_adjusted - ALPHA) > 1e-9:
            assert excludes == (cell.p_adjusted < ALPHA), (cell.diff, cell.p_adjusted)


def test_a_two_trial_cell_at_100_and_0_prints_the_interval_it_tested_unstretched() -> None:
    # Two trials a side, all passing against all failing: the score test does not reject
    # (p = 0.083), and its interval reaches past 0 on its own; nothing is stretched to +0.
    [cell] = compared(
        "config", {("config", "all"): {"s": (2, 2)}}, {("config", "all"): {"s": (2, 0)}}
    )
    assert cell.verdict == "not significant"
    assert cell.diff.low == -1.0 and cell.diff.high > 0.1
    assert cell.interval_text.startswith("-100…+") and cell.interval_text.endswith(" at 95%")


def test_a_clustered_interval_is_not_clipped_to_a_rate() -> None:
    # t · se either side of -0.8 on four degrees of freedom reaches below -100 points: the
    # test used that interval, so it is shown, not cut at -100.
    left = {("config", "all"): {**{f"s{i}": (2, 2) for i in range(4)}, "s4": (2, 1)}}
    right = {("config", "all"): {**{f"s{i}": (2, 0) for i in range(4)}, "s4": (2, 1)}}
    [cell] = compared("config", left, right)
    assert cell.diff.method == "clustered"
    assert cell.diff.low < -1.0
    assert cell.interval_text.startswith("-1")
    assert float(cell.interval_text.split("…")[0]) < -100


def test_points_keep_each_end_on_its_side_of_zero() -> None:
    assert points(-0.0004) == "-0.04"
    assert points(0.00004) == "+0.004"
    assert points(-1.0) == "-100"
    assert points(0.0) == points(-0.0) == "+0"
