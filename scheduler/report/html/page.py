"""A scorecard as one self-contained HTML page: no network, no external scripts.

The page embeds the scorecard JSON and a small script that draws three SVG charts — a pass-rate
heatmap (model × prompt vs tool), latency distributions per configuration and failure-mode bars
— plus tables per tier and scenario, and a drill-down to sample trial transcripts per scenario.
A scorecard with answer quality gets that section too (mcp_farm.scheduler.report.html.answers).
The script counts what it drew in `body[data-charts]` and shows any script error on the page
(tests/scheduler/report/test_report_html.py opens it in headless Chromium and checks both).
The script and the style are package files beside this module (page.js, page.css). The page
reads no database: the caller passes the sample trials in (scorecard/queries/samples.py).
"""

from __future__ import annotations

import html
import json
from importlib.resources import files
from typing import Any

from mcp_farm.scheduler.report.cells import (
    CONVERSATION_HEADS,
    USER_HEADS,
    VARIANCE_HEADS,
    VARIANCE_NOTE,
    cassette_note,
    conversation_cells,
    dash_note,
    harness_note,
    interval,
    pass_k,
    pct,
    recovery_cell,
    secs,
    shows_recovery,
    shows_state,
    state_cell,
    user_cells,
    user_notes,
    variance_rows,
)
from mcp_farm.scheduler.report.html.answers import (
    answers_script,
    answers_section,
)
from mcp_farm.scheduler.report.html.curves import curves_section, selection_section
from mcp_farm.scheduler.report.visible import visible, visible_fields
from mcp_farm.scheduler.scorecard.queries.samples import (
    SAMPLES_PER_CELL,
    SampleTrials,
)
from mcp_farm.schema.scorecard import (
    Row,
    Scorecard,
)

STYLE = files(__package__).joinpath("page.css").read_text(encoding="utf-8")
SCRIPT = files(__package__).joinpath("page.js").read_text(encoding="utf-8")


def esc(text: str) -> str:
    """Text escaped for HTML, with what would hide shown (scheduler/report/visible.py)."""
    return html.escape(visible(text))


def _transcript(trial: Any) -> str:
    # Setup calls first, marked: the farm made them before the model started.
    parts = [
        f"[setup] {call.get('server')}.{call.get('tool')}({json.dumps(call.get('arguments'))})"
        + ("" if call.get("ok") else f" failed: {call.get('error')}")
        for call in json.loads(trial.setup_json or "[]")
    ]
    asked: dict[int | None, list[str]] = {}
    for x in json.loads(getattr(trial, "elicitations_json", None) or "[]"):
        scripted = "" if x.get("scripted") else ", unscripted"
        content = f" {json.dumps(x.get('content'))}" if x.get("content") is not None else ""
        asked.setdefault(x.get("call"), []).append(
            f"\n  [elicitation from {x.get('server')}] {x.get('message')}"
            f"\n  [user{scripted}] {x.get('action')}{content}"
        )
    made = 0
    messages = json.loads(trial.transcript_json or "[]")
    heads = _turn_heads(trial, messages)
    parts += heads.pop(None, [])
    for i, message in enumerate(messages):
        parts += heads.get(i, [])
        who = message.get("role", "?")
        if message.get("farm"):
            # A conversation's expected turn, shown by the farm after a failed one (continue).
            who = f"{who}, expected turn shown by the farm"
        body = message.get("content") or ""
        for call in message.get("tool_calls") or []:
            body += f"\n→ {call.get('name')}({json.dumps(call.get('arguments'))})"
            if not message.get("farm"):
                body += "".join(asked.pop(made, []))
                made += 1
        parts.append(f"[{who}] {body}")
    parts += [line.strip() for rest in asked.values() for line in rest]
    return esc("\n\n".join(parts))


def _turn_heads(trial: Any, messages: list[dict[str, Any]]) -> dict[int | None, list[str]]:
    """Each conversation turn's line (`_turn_lines`) by the position of its user message: the
    last user messages are the turns' (a prompt's few-shot examples come before them). Lines
    with no message to go before (a transcript cut short) are under None, shown first."""
    lines = _turn_lines(trial)
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if len(users) < len(lines):
        return {None: lines}
    return {i: [line] for i, line in zip(users[len(users) - len(lines) :], lines, strict=True)}


def _turn_lines(trial: Any) -> list[str]:
    """A conversation's turns, each as `turn N: outcome (detail) · tools +added −removed`,
    shown before the turn's user message; nothing for a one-prompt trial."""
    lines = []
    for turn in json.loads(getattr(trial, "turns_json", None) or "[]"):
        line = f"turn {int(turn.get('index', 0)) + 1}: {turn.get('outcome')}"
        if turn.get("detail"):
            line += f" ({turn['detail']})"
        changed = [f"+{n}" for n in turn.get("tools_added") or []]
        changed += [f"−{n}" for n in turn.get("tools_removed") or []]
        if changed:
            line += " · tools " + " ".join(changed)
        if turn.get("farm_problem"):
            line += f" · not continued: {turn['farm_problem']}"
        lines.append(line)
    return lines


def _table(heads: list[str], rows: list[list[str]], numeric_from: int) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in heads)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{esc(c)}</td>' if i >= numeric_from else f"<td>{esc(c)}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _rate_table(card: Scorecard, dimension: str) -> str:
    recovery = shows_recovery(card, dimension)
    state = shows_state(card, dimension)
    rows = [
        [
            r.model,
            r.prompt,
            r.key,
            str(r.n),
            pct(r.rate),
            pct(r.first_rate),
            *([recovery_cell(r)] if recovery else []),
            *([state_cell(r)] if state else []),
            interval(r),
            secs(r.latency.p95),
        ]
        for r in card.of(dimension)  # type: ignore[arg-type]
    ]
    heads = ["model", "prompt", dimension, "n", "pass", "1st try"]
    heads += [*(["recovered"] if recovery else []), *(["state"] if state else [])]
    heads += ["95% CI", "p95"]
    return _table(heads, rows, 3)


def _drilldown(card: Scorecard, samples: SampleTrials) -> str:
    out = []
    for row in card.of("scenario"):
        trials = samples.get((row.model, row.prompt, row.key), [])
        state = "pass" if row.n and row.passes == row.n else "fail"
        recovery = f", recovered {recovery_cell(row)}" if row.errored else ""
        items = "".join(
            f"<details><summary>repetition {t.repetition}"
            f"{' (paraphrased)' if t.variant else ''}: <b>{esc(t.outcome or '')}</b>"
            f" in {secs(t.latency_s)} <span class=muted>{esc(t.detail or '')}"
            f"</span></summary><pre>{_transcript(t)}</pre></details>"
            for t in trials
        )
        out.append(
            f'<details id="s-{esc(row.model)}-{esc(row.prompt)}-'
            f'{esc(row.key)}"><summary><span class="{state}">{row.passes}/{row.n}'
            f"</span> {esc(row.key)} — {esc(row.model)} / "
            f"{esc(row.prompt)}{esc(recovery)}</summary>{items}</details>"
        )
    return "".join(out)


def _p(row: Row) -> list[str]:
    return [secs(row.latency.p50), secs(row.latency.p95), secs(row.latency.p99)]


def to_html(card: Scorecard, samples: SampleTrials | None = None) -> str:
    """The report page; with `samples` (scorecard.queries.samples.sample_trials), their
    transcripts are included for the drill-down."""
    card = visible_fields(card)
    # Looked up by the card's names, shown as the card's are.
    samples = {
        (visible(m), visible(p), visible(s)): found for (m, p, s), found in (samples or {}).items()
    }
    data = card.model_dump_json().replace("</", "<\\/")
    state = shows_state(card, "config")
    configs = [
        [
            r.model,
            r.prompt,
            str(r.n),
            pct(r.rate),
            pct(r.first_rate),
            recovery_cell(r),
            *([state_cell(r)] if state else []),
            interval(r),
            pass_k(r.pass_hat_k, r.k),
            *_p(r),
        ]
        for r in card.of("config")
    ]
    note = dash_note(card, speed=False)
    footnote = f'<p class="muted">{esc(note)}</p>' if note else ""
    harness = harness_note(card)
    banner = f'\n<p class="harness">{esc(harness)}</p>' if harness else ""
    if cassette := cassette_note(card):
        banner += f'\n<p class="muted">{esc(cassette)}</p>'
    talks = ""
    if card.conversations:
        rows = [[c.model, c.prompt, *conversation_cells(c)] for c in card.conversations]
        talks = "<h2>Conversations</h2>" + _table(["model", "prompt", *CONVERSATION_HEADS], rows, 2)
    if card.simulated_users:
        rows = [[u.model, u.prompt, *user_cells(u)] for u in card.simulated_users]
        talks += "<h2>Simulated users</h2>" + _table(["model", "prompt", *USER_HEADS], rows, 2)
        talks += "".join(f'<p class="muted">{esc(n)}</p>' for n in user_notes(card))
        if split := variance_rows(card):
            talks += "<h3>Agent × user variance</h3>"
            talks += _table(["model", "prompt", *VARIANCE_HEADS], split, 2)
            talks += f'<p class="muted">{esc(VARIANCE_NOTE)}</p>'
    title = esc(f"Scorecard {card.sweep_id}")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
{STYLE}</style></head>
<body data-charts="0">
<h1>{title}</h1>
<p class="muted">{card.done}/{card.total} trials recorded; rates exclude infra errors; intervals
are Wilson 95%. Built {esc(card.built_at)} from sweep
<code>{esc(card.provenance.sweep_name)}</code>.</p>{banner}
<pre id="errors"></pre>
<h2>Pass rate per model × prompt config</h2>
{_table(["model", "prompt", "n", "pass", "1st try", "recovered", *(["state"] if state else []), "95% CI", "pass^k", "p50", "p95", "p99"], configs, 2)}
{footnote}
<h2>Pass rate per tool (heatmap)</h2><div id="heatmap"></div>
<h2>Trial latency distribution</h2><div id="latency"></div>
<h2>Outcomes</h2><div id="failures"></div>{talks}{curves_section(card, _table)}{selection_section(card, _table)}{answers_section(card, _table)}
<h2>Per tier</h2>{_rate_table(card, "tier")}
<h2>Verbatim vs paraphrased</h2>{_rate_table(card, "phrasing")}
<h2>Scenarios and sample transcripts</h2>
<p class="muted">Up to {SAMPLES_PER_CELL} trials per scenario and configuration, failures
first.</p>
{_drilldown(card, samples)}
<script type="application/json" id="card">{data}</script>
<script>
{SCRIPT}</script>{answers_script(card)}
</body></html>
"""
