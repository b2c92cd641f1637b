"""The answer-quality section of the HTML report, present only when the scorecard has one.

Three SVG charts drawn from the page's embedded scorecard JSON — fairness and adoption as two
bars side by side per configuration (the baseline shaded), citation grounding as stacked bars,
and the judge's σ per level against its noise floor — then the tables the Markdown report has,
and a banner when the ranking is unverified. The script adds what it drew to `body[data-charts]`;
its errors land in the page's `#errors` like those of the main script. The script is the
package file answers.js beside this module.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from importlib.resources import files

from mcp_farm.scheduler.report.answer_tables import (
    answer_tables,
    unverified_note,
)
from mcp_farm.schema.scorecard import Scorecard

TableHtml = Callable[[list[str], list[list[str]], int], str]
"""report_html's table writer: (heads, rows, first numeric column) → escaped HTML."""

BANNER_STYLE = (
    "background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 12px;margin:8px 0"
)

SCRIPT = files(__package__).joinpath("answers.js").read_text(encoding="utf-8")


def answers_section(card: Scorecard, table: TableHtml) -> str:
    """The section's markup (charts are drawn into its empty containers); empty without one."""
    answers = card.answers
    if answers is None:
        return ""
    note = unverified_note(answers)
    banner = (
        f'<div id="unverified" role="alert" style="{BANNER_STYLE}"><strong>Unverified '
        f"ranking:</strong> {html.escape(note)}</div>"
        if note
        else ""
    )
    no_judge = "" if answers.judges else '<p class="muted">No judge scored this sweep.</p>'
    parts = [
        "",
        "<h2>Answer quality</h2>",
        banner,
        f'<p class="muted">Scoring <code>{html.escape(answers.scoring_id)}</code> '
        f"({html.escape(answers.kind)}), judge <code>{html.escape(answers.judge or 'none')}"
        "</code>. Fairness and adoption are separate layers: drawn side by side, never added.</p>",
        '<h3>Fairness vs adoption</h3><div id="answer-fairness"></div>',
        '<h3>Citation grounding</h3><div id="answer-grounding"></div>',
        f'<h3>Judge σ per level</h3><div id="answer-judge">{no_judge}</div>',
    ]
    for t in answer_tables(answers):
        parts += [
            f"<h3>{html.escape(t.title)}</h3>",
            table(t.heads, t.rows, 2),
            f'<p class="muted">{html.escape(t.caption)}</p>',
        ]
    return "\n".join(parts)


def answers_script(card: Scorecard) -> str:
    """The drawing script, to follow the embedded scorecard JSON; empty without answers."""
    return "" if card.answers is None else f"\n<script>\n{SCRIPT}</script>"
