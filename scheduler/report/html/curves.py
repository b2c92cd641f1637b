"""The robustness sections of the HTML report: pass rate against tool count as inline SVG (no
script, nothing fetched), and tool selection recall."""

from __future__ import annotations

import html
import math
from collections.abc import Callable

from mcp_farm.scheduler.report.robustness_cells import (
    CURVE_HEADS,
    POSITION_HEADS,
    POSITION_TITLE,
    RANKING_HEADS,
    RANKING_NOTE,
    SELECTION_HEADS,
    SELECTION_NOTE,
    TOKENS_NOTE,
    curve_note,
    curve_rows,
    position_rows,
    ranking_rows,
    selection_rows,
    tokens,
)
from mcp_farm.schema.scorecard import Curve, Scorecard

WIDTH, HEIGHT = 440, 240
LEFT, RIGHT, TOP, BOTTOM = 52, 16, 16, 44
INSET = 10
"""Space between the y axis and the first level (0 tools), so its whisker is not drawn on the
axis line."""


def _xy(count: int, rate: float, most: int) -> tuple[float, float]:
    span = math.log2(1 + most) or 1.0
    x = LEFT + INSET + (WIDTH - LEFT - RIGHT - INSET) * math.log2(1 + count) / span
    y = HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * rate
    return round(x, 1), round(y, 1)


def _axes(x_title: str, y_title: str) -> list[str]:
    """Both axes and their titles."""
    base = HEIGHT - BOTTOM
    return [
        f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="#888"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}" stroke="#888"/>',
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 6}" font-size="11" '
        f'text-anchor="middle">{html.escape(x_title)}</text>',
        f'<text x="12" y="{(TOP + base) / 2}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 12 {(TOP + base) / 2})">{html.escape(y_title)}</text>',
    ]


def _rate_ticks() -> list[str]:
    return [
        f'<text x="{LEFT - 4}" y="{HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * tick + 4}" '
        f'font-size="10" text-anchor="end">{tick:.0%}</text>'
        for tick in (0.0, 0.5, 1.0)
    ]


def _whisker(x: float, low: float, high: float) -> str:
    """An interval as a vertical line with caps, visible even where it has no length."""
    return (
        f'<line x1="{x}" y1="{low}" x2="{x}" y2="{high}" stroke="#333"/>'
        f'<line x1="{x - 3}" y1="{low}" x2="{x + 3}" y2="{low}" stroke="#333"/>'
        f'<line x1="{x - 3}" y1="{high}" x2="{x + 3}" y2="{high}" stroke="#333"/>'
    )


def curve_svg(c: Curve) -> str:
    """Observed rates with their intervals (dots and whiskers), the fitted curve and its band."""
    most = max(p.tool_count for p in c.points)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{html.escape(curve_note(c))}">',
        *_axes("tools in the list (log scale of 1 + tools)", "pass rate"),
        *_rate_ticks(),
    ]
    fitted = [p for p in c.points if p.fitted is not None]
    if fitted:
        upper = [_xy(p.tool_count, p.fitted_high or 0.0, most) for p in fitted]
        lower = [_xy(p.tool_count, p.fitted_low or 0.0, most) for p in reversed(fitted)]
        band = " ".join(f"{x},{y}" for x, y in upper + lower)
        parts.append(f'<polygon points="{band}" fill="#4a7fb5" fill-opacity="0.15"/>')
        line = " ".join(
            f"{x},{y}" for x, y in (_xy(p.tool_count, p.fitted or 0.0, most) for p in fitted)
        )
        parts.append(f'<polyline points="{line}" fill="none" stroke="#4a7fb5"/>')
    _x, ty = _xy(0, c.threshold, most)
    parts.append(
        f'<line x1="{LEFT}" y1="{ty}" x2="{WIDTH - RIGHT}" y2="{ty}" stroke="#c44" '
        'stroke-dasharray="4 3"/>'
    )
    for p in c.points:
        x, low = _xy(p.tool_count, p.low, most)
        _x, high = _xy(p.tool_count, p.high, most)
        parts.append(_whisker(x, low, high))
        if p.rate is not None:
            _x, y = _xy(p.tool_count, p.rate, most)
            parts.append(f'<circle cx="{x}" cy="{y}" r="3" fill="#333"/>')
        parts.append(
            f'<text x="{x}" y="{HEIGHT - BOTTOM + 14}" font-size="10" '
            f'text-anchor="middle">{p.tool_count}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def tokens_svg(c: Curve) -> str:
    """Pass rate (dots and whiskers) against the mean prompt tokens of each level that recorded
    them, on a linear axis from 0; empty when no level did."""
    known = [p for p in c.points if p.prompt_tokens is not None]
    if not known:
        return ""
    most = max(p.prompt_tokens or 0.0 for p in known) or 1.0
    width = WIDTH - LEFT - RIGHT - INSET

    def at(tokens: float, rate: float) -> tuple[float, float]:
        _x, y = _xy(0, rate, 1)
        return round(LEFT + INSET + width * tokens / most, 1), y

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="pass rate against prompt tokens">',
        *_axes("mean prompt tokens per trial", "pass rate"),
        *_rate_ticks(),
    ]
    for p in known:
        x, low = at(p.prompt_tokens or 0.0, p.low)
        _x, high = at(p.prompt_tokens or 0.0, p.high)
        parts.append(_whisker(x, low, high))
        if p.rate is not None:
            parts.append(f'<circle cx="{x}" cy="{at(0.0, p.rate)[1]}" r="3" fill="#333"/>')
        parts.append(
            f'<text x="{x}" y="{HEIGHT - BOTTOM + 14}" font-size="10" '
            f'text-anchor="middle">{tokens(p.prompt_tokens)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def curves_section(card: Scorecard, table: Callable[[list[str], list[list[str]], int], str]) -> str:
    """The section for a sweep with a `tool_list` axis; empty for any other."""
    if not card.robustness and not card.positions:
        return ""
    heads = ["model", "prompt", "descriptions", "names"]
    charts = "".join(
        f"<figure>{curve_svg(c)}<figcaption>{html.escape(curve_note(c))}</figcaption></figure>"
        + (
            f"<figure>{chart}<figcaption>Pass rate against prompt tokens</figcaption></figure>"
            if (chart := tokens_svg(c))
            else ""
        )
        for c in card.robustness
    )
    if any(p.prompt_tokens is not None for c in card.robustness for p in c.points):
        charts += f'<p class="muted">{html.escape(TOKENS_NOTE)}</p>'

    section = (
        "<h2>Pass rate against tool count</h2>"
        + table([*heads, *CURVE_HEADS], curve_rows(card), 4)
        + charts
    )
    if card.positions:
        section += f"<h3>{html.escape(POSITION_TITLE)}</h3>"
        section += table([*heads, *POSITION_HEADS], position_rows(card), 4)
    return section


def selection_section(
    card: Scorecard, table: Callable[[list[str], list[list[str]], int], str]
) -> str:
    """The section for a sweep whose prompt configs select tools; empty for any other."""
    if not card.selection:
        return ""
    heads = ["model", "prompt", *SELECTION_HEADS]
    note = f'<p class="muted">{html.escape(SELECTION_NOTE)}</p>'
    ranked = table(["model", "prompt", *RANKING_HEADS], ranking_rows(card), 3)
    ranked += f'<p class="muted">{html.escape(RANKING_NOTE)}</p>'
    return (
        "<h2>Tool selection before the model</h2>"
        + table(heads, selection_rows(card), 3)
        + note
        + "<h3>Ranks, ties and time</h3>"
        + ranked
    )
