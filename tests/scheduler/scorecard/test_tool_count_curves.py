"""Curves of pass rate against tool count, and how reports show them."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from mcp_farm.scheduler.report.formats import to_markdown
from mcp_farm.scheduler.report.html.curves import LEFT, curve_svg
from mcp_farm.scheduler.report.html.page import to_html
from mcp_farm.scheduler.report.robustness_cells import curve_note, signed
from mcp_farm.scheduler.report.terminal.scorecard import print_scorecard
from mcp_farm.scheduler.scorecard.gates import check_gates
from mcp_farm.scheduler.scorecard.robustness import curves, threshold_of
from mcp_farm.scheduler.statistics.rates import wilson
from mcp_farm.schema import Gate
from mcp_farm.schema.scorecard import Latency, Provenance, Row, Scorecard
from mcp_farm.schema.specs import ToolListLevel, labelled


def _row(count: int, passes: int, n: int = 20, desc: str = "as_is") -> Row:
    low, high = wilson(passes, n)
    level = ToolListLevel(tool_count=count, descriptions=desc)  # type: ignore[arg-type]
    return Row(
        dimension="config",
        model="m",
        prompt=labelled("native", level),
        n=n,
        passes=passes,
        rate=passes / n,
        low=low,
        high=high,
        k=1,
        pass_hat_k=None,
        pass_at_k=None,
        latency=Latency(),
        outcomes={"pass": passes, "wrong_tool": n - passes},
    )


FALLING = [_row(0, 19), _row(10, 15), _row(50, 9), _row(200, 3)]


def test_a_falling_pass_rate_gives_a_negative_slope_and_the_threshold_level() -> None:
    (curve,) = curves(FALLING, 0.5)
    assert [p.tool_count for p in curve.points] == [0, 10, 50, 200]
    assert curve.slope is not None and curve.slope_high is not None
    assert curve.slope < 0 and curve.slope_high < 0
    assert curve.below_at == 50
    assert curve.crossing is not None and 10 < curve.crossing < 50
    assert curve.points[-1].wrong_tool == 17
    for p in curve.points:
        assert p.fitted_low is not None and p.fitted_high is not None
        assert p.fitted_low <= (p.fitted or 0) <= p.fitted_high


def test_a_flat_rate_has_a_slope_interval_around_zero_and_never_crosses() -> None:
    (curve,) = curves([_row(0, 10), _row(50, 10), _row(200, 10)], 0.3)
    assert curve.slope_low is not None and curve.slope_high is not None
    assert curve.slope_low < 0 < curve.slope_high
    assert curve.below_at is None and curve.crossing is None


def test_every_pass_keeps_the_fit_finite() -> None:
    (curve,) = curves([_row(0, 20), _row(10, 20)], 0.5)
    assert curve.slope is not None and abs(curve.slope) < 10


def test_each_description_level_gets_its_own_curve_and_other_configs_none() -> None:
    plain = FALLING[0].model_copy(update={"prompt": "json"})
    found = curves(
        [*FALLING, _row(0, 20, desc="stripped"), _row(50, 2, desc="stripped"), plain], 0.5
    )
    assert [(c.prompt, c.descriptions) for c in found] == [
        ("native", "as_is"),
        ("native", "stripped"),
    ]


def test_the_threshold_comes_from_the_recorded_sweep() -> None:
    assert threshold_of('{"tool_list": {"threshold": 0.8}}') == 0.8
    assert threshold_of('{"name": "x"}') == 0.5


def _card() -> Scorecard:
    return Scorecard(
        sweep_id="s",
        built_at="now",
        total=80,
        done=80,
        rows=FALLING,
        extras=[],
        tool_calls=[],
        latency_bins=[1.0],
        provenance=Provenance(
            sweep_name="s",
            spec_json="{}",
            farm_versions=[],
            git_commits=[],
            nodes=[],
            model_pins={},
            aggregator_version="5",
        ),
        robustness=curves(FALLING, 0.5),
    )


def test_the_terminal_shows_the_levels_and_the_slope() -> None:
    out = io.StringIO()
    print_scorecard(_card(), Console(file=out, width=200))
    text = out.getvalue()
    assert "Pass rate against tool count" in text
    assert "first below 50% at 50 tools" in text


def test_the_html_report_draws_the_curve_as_inline_svg_fetching_nothing() -> None:
    page = to_html(_card())
    assert "<svg" in page and "<polyline" in page and "<polygon" in page
    assert (
        "src=" not in page.split("<h2>Pass rate against tool count</h2>")[1].split("</figure>")[0]
    )


def test_the_json_carries_the_curve() -> None:
    card = Scorecard.model_validate_json(_card().model_dump_json())
    assert card.robustness[0].below_at == 50


def test_gates_on_the_slope_and_on_the_drop_at_a_level() -> None:
    card = _card()
    slope = Gate(metric="tool_count_slope", min=-0.1)
    gentle = Gate(metric="tool_count_slope", min=-5.0)
    drop_at_10 = Gate(metric="tool_count_drop", max=0.25, only="10")
    drop_at_most = Gate(metric="tool_count_drop", max=0.25)
    checked, breaches = check_gates(card, [slope, gentle, drop_at_10, drop_at_most])
    assert checked == 4
    assert [b.gate for b in breaches] == [slope, drop_at_most]
    assert "descriptions as_is" in breaches[0].explain()
    assert breaches[1].value == pytest.approx((19 - 3) / 20)


def test_a_drop_gate_names_a_tool_count() -> None:
    with pytest.raises(ValueError, match="tool count"):
        Gate(metric="tool_count_drop", max=0.2, only="many")


def test_a_level_counts_the_trials_whose_prompt_did_not_fit_the_context() -> None:
    fits = _row(0, 10)
    overflowing = _row(200, 0).model_copy(update={"outcomes": {"context_overflow": 20}})
    (curve,) = curves([fits, overflowing], 0.5)
    assert [(p.tool_count, p.context_overflow) for p in curve.points] == [(0, 0), (200, 20)]


def test_a_small_slope_is_printed_with_two_significant_digits() -> None:
    assert signed(-0.003123) == "-0.0031"
    assert signed(-1.234) == "-1.23"
    assert signed(0.0) == "+0.00"
    assert signed(None) == "–"
    (curve,) = curves(FALLING, 0.5)
    small = curve.model_copy(update={"slope": -0.00312, "slope_low": -0.041, "slope_high": 0.02})
    note = curve_note(small)
    assert "slope -0.0031 log-odds per doubling of tools (95% CI -0.041 to +0.020)" in note


def test_the_html_curve_has_axis_titles_and_a_capped_whisker_at_zero_tools_off_the_axis() -> None:
    (curve,) = curves(FALLING, 0.5)
    svg = curve_svg(curve)
    assert ">tools in the list (log scale of 1 + tools)</text>" in svg
    assert ">pass rate</text>" in svg
    zero_x = float(svg.split('<circle cx="')[1].split('"')[0])
    assert zero_x > LEFT
    # A vertical line at 0 tools and a cap across it at each end of the interval.
    assert f'<line x1="{zero_x}" y1=' in svg
    assert svg.count(f'<line x1="{zero_x - 3}"') == 2


def test_the_markdown_report_shows_the_curve_and_its_slope() -> None:
    text = to_markdown(_card())
    assert "## Pass rate against tool count" in text
    assert "first below 50% at 50 tools" in text
