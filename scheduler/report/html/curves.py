"""The robustness sections of the HTML report: pass rate against tool count as inline SVG (no
script, nothing fetched), and tool selection recall."""

from __future__ import annotations

import html
import math
from collections.abc import Callable

from mcp_farm.scheduler.report.robustness_cells import (
    CURVE_HEADS,
    RANKING_HEADS,
    RANKING_NOTE,
    SELECTION_HEADS,
    SELECTION_NOTE,
    curve_note,
    curve_rows,
    ranking_rows,
    selection_rows,
)
from mcp_farm.schema.scorecard import Curve, Scorecard

WIDTH, HEIGHT, PAD = 420, 220, 36


def _xy(count: int, rate: float, most: int) -> tuple[float, float]:
    span = math.log2(1 + most) or 1.0
    x = PAD + (WIDTH - 2 * PAD) * math.log2(1 + count) / span
    y = HEIGHT - PAD - (HEIGHT - 2 * PAD) * rate
    return round(x, 1), round(y, 1)


def curve_svg(c: Curve) -> str:
    """Observed rates with their intervals (dots and whiskers), the fitted curve and its band."""
    most = max(p.tool_count for p in c.points)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{html.escape(curve_note(c))}">',
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" '
        'stroke="#888"/>',
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{HEIGHT - PAD}" stroke="#888"/>',
    ]
    for tick in (0.0, 0.5, 1.0):
        _x, y = _xy(0, tick, most)
        parts.append(f'<text x="4" y="{y + 4}" font-size="10">{tick:.0%}</text>')
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
        f'<line x1="{PAD}" y1="{ty}" x2="{WIDTH - PAD}" y2="{ty}" stroke="#c44" '
        'stroke-dasharray="4 3"/>'
    )
    for p in c.points:
        x, low = _xy(p.tool_count, p.low, most)
        _x, high = _xy(p.tool_count, p.high, most)
        parts.append(f'<line x1="{x}" y1="{low}" x2="{x}" y2="{high}" stroke="#333"/>')
        if p.rate is not None:
            _x, y = _xy(p.tool_count, p.rate, most)
            parts.append(f'<circle cx="{x}" cy="{y}" r="3" fill="#333"/>')
        parts.append(
            f'<text x="{x - 6}" y="{HEIGHT - PAD + 14}" font-size="10">{p.tool_count}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def curves_section(card: Scorecard, table: Callable[[list[str], list[list[str]], int], str]) -> str:
    """The section for a sweep with a `tool_list` axis; empty for any other."""
    if not card.robustness:
        return ""
    heads = ["model", "prompt", "descriptions", "names", *CURVE_HEADS]
    charts = "".join(
        f"<figure>{curve_svg(c)}<figcaption>{html.escape(curve_note(c))}</figcaption></figure>"
        for c in card.robustness
    )
    return "<h2>Pass rate against tool count</h2>" + table(heads, curve_rows(card), 4) + charts


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
