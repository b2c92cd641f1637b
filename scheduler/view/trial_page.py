"""The explorer's trial pages: one trial (transcript, the grader's verdict step by step, answer
scores, judge verdicts, provenance), and two trials side by side with their differences marked."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mcp_farm.scheduler.report.cells import NOT_MEASURED
from mcp_farm.scheduler.view.html import e, frame, link, secs, table, url
from mcp_farm.scheduler.view.pages import REFRESH_S
from mcp_farm.scheduler.view.transcript import (
    Entry,
    StepLine,
    Verdict,
    entries,
    pins,
    selection_lines,
    state_summary,
    user_lines,
    verdict,
)
from mcp_farm.schema.trial import AGENT_OUTPUT_BYTES, AgentOutput

if TYPE_CHECKING:
    from mcp_farm.scheduler.view.queries import TrialRecord

SUMMARY = (
    ("sweep", "sweep_id"),
    ("model", "model_id"),
    ("config", "config"),
    ("scenario", "scenario_id"),
    ("version", "scenario_version"),
    ("tier", "tier"),
    ("repetition", "repetition"),
    ("wording", "variant"),
    ("status", "status"),
    ("outcome", "outcome"),
    ("first try", "first_try"),
    ("route", "route"),
    ("left cassette", "left_cassette"),
    ("stop reason", "stop_reason"),
    ("latency", "latency_s"),
    ("time in the model", "model_s"),
    ("turns", "turns"),
    ("tokens in / out", "tokens"),
    ("attempts", "attempts"),
    ("node", "node"),
    ("host", "host"),
)


def summary_value(trial: Any, column: str) -> str:
    """One summary field of a trial as text (shared by both pages and the terminal). An
    agent's tokens and time in the model, where its model calls did not pass the farm, read
    "not measured", never 0."""
    measured = getattr(trial, "tokens_measured", True) is not False
    if column in ("tokens", "model_s") and not measured:
        return NOT_MEASURED
    if column == "tokens":
        return f"{trial.tokens_prompt} / {trial.tokens_completion}"
    value = getattr(trial, column)
    if column in ("latency_s", "model_s"):
        return secs(value)
    if column == "variant":
        return f"paraphrase {value}" if value else "verbatim"
    if isinstance(value, bool) or column in ("first_try", "left_cassette"):
        return "–" if value is None else ("yes" if value else "no")
    return "–" if value is None or value == "" else str(value)


def _entry_html(item: Entry) -> str:
    if item.kind in ("user", "assistant", "system"):
        return f'<div class="msg {item.kind}"><b>{item.kind}</b><pre>{e(item.text)}</pre></div>'
    if item.kind == "undecoded":
        return (
            '<div class="msg undecoded"><b>assistant (a call the decoder could not read)</b>'
            f"<pre>{e(item.text)}</pre></div>"
        )
    if item.kind == "elicit":
        return (
            f'<div class="call elicit"><b>elicitation from {e(item.server or "?")}</b>'
            f"<pre>{e(item.text)}</pre><details><summary>requested schema</summary>"
            f"<pre>{e(item.arguments)}</pre></details><p>user: {e(item.result or '')}</p></div>"
        )
    where = f"{item.server}." if item.server else ""
    number = "setup" if item.kind == "setup" else f"#{item.index}"
    state = "ok" if item.ok else "error"
    head = (
        f'<b>{e(number)} {e(where)}{e(item.text)}</b> <span class="{state}">{state}</span> '
        f"{e(secs(item.latency_s))}"
    )
    parts = [head, f"<pre>{e(item.arguments)}</pre>"]
    if item.error:
        parts.append(f'<p class="error">{e(item.error)}</p>')
    if item.result is not None:
        cut = ' <span class="cut">result cut</span>' if item.cut else ""
        parts.append(f"<details open><summary>result{cut}</summary><pre>{e(item.result)}</pre>")
        parts.append("</details>")
    return f'<div class="call {item.kind}">{"".join(parts)}</div>'


def _verdict_html(found: Verdict) -> str:
    turns = any(s.turn is not None for s in found.steps)
    rows = [
        [
            *([e(s.turn)] if turns else []),
            e(s.number),
            e(s.label),
            f"<code>{e(s.params)}</code>",
            e(", ".join(s.calls) or "no call"),
            _step_flag(s),
        ]
        for s in found.steps
    ]
    parts = [
        f'<p class="verdict"><span class="{e(found.outcome)}">{e(found.outcome)}</span> '
        f"{e(found.detail)}</p>"
    ]
    if rows:
        heads = [*(["turn"] if turns else []), "step", "tool", "params", "calls", ""]
        parts.append(table(heads, rows))
    if found.note:
        parts.append(f'<p class="muted">{e(found.note)}</p>')
    return "".join(parts)


def _step_flag(step: StepLine) -> str:
    """Why the step failed (a stored verdict), or that the verdict names it (an older one)."""
    if step.problem:
        return f'<span class="failed-step">{e(step.problem)}</span>'
    return '<span class="failed-step">named in the verdict</span>' if step.named else ""


def _answers_html(record: TrialRecord) -> str:
    if not record.answers and not record.judgements:
        return ""
    rows = [
        [
            e(a.scoring_id[:12]),
            e(a.scoring_kind or ""),
            *(e(_num(getattr(a, c))) for c in ANSWER_COLUMNS),
            e(f"{a.grounded}/{a.unresolved}/{a.hallucinated}"),
            e(answer_tokens(a)),
        ]
        for a in record.answers
    ]
    heads = ["scoring", "kind", *ANSWER_COLUMNS, "grounded/unresolved/hallucinated", "tokens"]
    judged = [
        [
            e(j.scoring_id[:12]),
            e(j.run),
            e(j.step),
            e(j.criterion),
            e(_num(j.score)),
            e(j.rationale),
        ]
        for j in record.judgements
    ]
    out = "<h2>Answer scores</h2>" + table(heads, rows, 2)
    if judged:
        heads = ["scoring", "run", "step", "criterion", "score", "rationale"]
        out += "<h2>Judge verdicts</h2>" + table(heads, judged)
    return out


ANSWER_COLUMNS = ("fairness", "adoption", "keyword_coverage", "grounding_rate", "judge_quality")


ANSWER_PHASES = (
    ("reasoning", "reasoning"),
    ("tool_io", "tool I/O"),
    ("verification", "verification"),
)


def answer_tokens(score: Any) -> str:
    """An answer score's tokens by phase as text (the page and the terminal): the reasoning
    reads "not measured", never 0, where the agent's model calls did not pass the farm; `~`
    marks an estimate (characters / 4)."""
    estimated = json.loads(score.estimated_json or "[]")
    shown = []
    for phase, label in ANSWER_PHASES:
        if phase == "reasoning" and not getattr(score, "tokens_measured", True):
            shown.append(f"{label} {NOT_MEASURED}")
            continue
        mark = "~" if phase in estimated else ""
        shown.append(f"{label} {mark}{getattr(score, f'tokens_{phase}'):,}")
    return ", ".join(shown)


def _num(value: Any) -> str:
    return "–" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))


def _pair(relation: str, other: str, this: str) -> dict[str, str]:
    return {"a": other, "b": this} if relation == "replays" else {"a": this, "b": other}


def _user_html(trial: Any) -> str:
    """The simulated user's part, when the trial had one: every line escaped."""
    lines = user_lines(trial)
    if not lines:
        return ""
    return "<h2>Simulated user</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in lines) + "</ul>"


def _selection_html(trial: Any) -> str:
    """What the tool selection held, per user message, when the trial's config selects."""
    lines = selection_lines(trial)
    if not lines:
        return ""
    return "<h2>Tool selection</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in lines) + "</ul>"


def _state_html(trial: Any) -> str:
    """The trial's state probes, each expected vs found, every value escaped."""
    line, rows = state_summary(trial)
    if not line:
        return ""
    heads = ["when", "probe", "expected", "found", "verdict"]
    cells = [
        [e(c) if i < 3 or i == 4 else f"<pre>{e(c)}</pre>" for i, c in enumerate(r)] for r in rows
    ]
    return f"<h2>State</h2><p>{e(line)}</p>" + (table(heads, cells) if rows else "")


KEPT_KB = AGENT_OUTPUT_BYTES // 1024


def agent_streams(trial: Any) -> list[tuple[str, str]] | None:
    """An agent trial's (heading, text) for its stdout and stderr, the last 8 KB of each:
    the agent's own text, untrusted, so every page escapes it. None for a model's trial."""
    raw = getattr(trial, "agent_output_json", "") or ""
    if not raw:
        return None
    try:
        output = AgentOutput.model_validate_json(raw)
    except ValueError:
        return [("agent output", "(does not read in this version of the farm)")]
    return [
        (name + (f" (its last {KEPT_KB} KB)" if cut else ""), text or "(nothing)")
        for name, text, cut in (
            ("stdout", output.stdout, output.stdout_cut),
            ("stderr", output.stderr, output.stderr_cut),
        )
    ]


def _agent_html(trial: Any) -> str:
    """An agent's stdout and stderr, escaped; nothing for a model's trial."""
    streams = agent_streams(trial)
    if streams is None:
        return ""
    return (
        f"<h2>Agent output</h2><p>What the agent's command wrote, the last {KEPT_KB} KB of "
        "each (control characters as escapes).</p>"
        + "".join(f"<h3>{e(name)}</h3><pre>{e(text)}</pre>" for name, text in streams)
    )


def trial_page(record: TrialRecord) -> str:
    """Everything stored about one trial."""
    t = record.trial
    summary = table(["", ""], [[e(k), e(summary_value(t, c))] for k, c in SUMMARY])
    story = "".join(_entry_html(x) for x in entries(t, record.calls)) or "<p>No transcript.</p>"
    answer = f"<h2>Final answer</h2><pre>{e(t.final_answer)}</pre>" if t.final_answer else ""
    others = [
        link(url("/compare", {"a": t.trial_id, "b": s.trial_id}), f"{s.model_id} / {s.config}")
        + f' <span class="{e(s.outcome or s.status)}">{e(s.outcome or s.status)}</span>'
        for s in record.siblings
    ]
    others += [
        # The recording on the left, its replay on the right.
        link(url("/compare", _pair(relation, r.trial_id, t.trial_id)), f"{relation} {r.sweep_id}")
        + f' <span class="{e(r.outcome or r.status)}">{e(r.outcome or r.status)}</span>'
        for relation, r in record.replays
    ]
    compare = (
        "<h2>Side by side with</h2><ul>" + "".join(f"<li>{o}</li>" for o in others) + "</ul>"
        if others
        else ""
    )
    body = (
        summary
        + "<h2>Verdict</h2>"
        + _verdict_html(verdict(t, record.calls))
        + _state_html(t)
        + _selection_html(t)
        + _user_html(t)
        + "<h2>Transcript</h2>"
        + story
        + answer
        + _agent_html(t)
        + _answers_html(record)
        + compare
        + "<h2>Provenance</h2><pre>"
        + e(json.dumps(pins(t), indent=2, sort_keys=True, ensure_ascii=False))
        + "</pre>"
    )
    return frame(
        f"Trial {t.trial_id[:12]}",
        body,
        crumbs=[
            (url(f"/sweeps/{t.sweep_id}"), t.sweep_id),
            (url(f"/sweeps/{t.sweep_id}/trials", {"scenario": t.scenario_id}), t.scenario_id),
        ],
        # A trial not yet recorded reloads until it is.
        refresh_s=REFRESH_S if t.status in ("pending", "running") else 0,
    )


def _call_text(item: Entry | None) -> str:
    if item is None:
        return ""
    state = "" if item.ok else f" error: {item.error}"
    return f"{item.text}({item.arguments}){state}\n→ {item.result or ''}"


def compare_page(a: TrialRecord, b: TrialRecord) -> str:
    """Two trials side by side: summary fields, verdicts, and calls in order, the rows where
    they differ marked."""

    def row(name: str, left: str, right: str) -> list[str]:
        mark = ' class="differs"' if left != right else ""
        return [e(name), f"<pre{mark}>{e(left)}</pre>", f"<pre{mark}>{e(right)}</pre>"]

    rows = [row(k, summary_value(a.trial, c), summary_value(b.trial, c)) for k, c in SUMMARY]
    rows.append(row("detail", a.trial.detail or "", b.trial.detail or ""))
    calls_a = [x for x in entries(a.trial, a.calls) if x.kind == "call"]
    calls_b = [x for x in entries(b.trial, b.calls) if x.kind == "call"]
    for i in range(max(len(calls_a), len(calls_b))):
        left = _call_text(calls_a[i] if i < len(calls_a) else None)
        right = _call_text(calls_b[i] if i < len(calls_b) else None)
        rows.append(row(f"call #{i}", left, right))
    rows.append(row("final answer", a.trial.final_answer or "", b.trial.final_answer or ""))
    heads = [
        "",
        link(url(f"/trials/{a.trial.trial_id}"), a.trial.trial_id[:12]),
        link(url(f"/trials/{b.trial.trial_id}"), b.trial.trial_id[:12]),
    ]
    head = "".join(f"<th>{h}</th>" for h in heads)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return frame(
        f"{a.trial.trial_id[:12]} vs {b.trial.trial_id[:12]}",
        f'<table class="side"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>',
        crumbs=[(url(f"/sweeps/{a.trial.sweep_id}"), a.trial.sweep_id)],
    )
