"""A scorecard as one self-contained HTML page: no network, no external scripts.

The page embeds the scorecard JSON and a small script that draws three SVG charts — a pass-rate
heatmap (model × prompt vs tool), latency distributions per configuration and failure-mode bars
— plus tables per tier and scenario, and a drill-down to sample trial transcripts per scenario.
A scorecard with answer quality gets that section too (mcp_farm.scheduler.report.html.answers).
The script counts what it drew in `body[data-charts]` and shows any script error on the page
(tests/scheduler/report/test_report_html.py opens it in headless Chromium and checks both).
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from mcp_farm.scheduler.report.html.answers import (
    answers_script,
    answers_section,
)
from mcp_farm.scheduler.report.terminal.scorecard import (
    dash_note,
    interval,
    pass_k,
    pct,
    secs,
)
from mcp_farm.scheduler.scorecard.latency import CONFIG
from mcp_farm.schema.scorecard import (
    Row,
    Scorecard,
)

SAMPLES_PER_CELL = 2

SAMPLES_SQL = f"""
select * from (
  select model_id, {CONFIG} as prompt_id, scenario_id, repetition, variant, outcome, detail, latency_s,
         final_answer, transcript_json, setup_json,
         row_number() over (partition by model_id, {CONFIG}, scenario_id
                            order by case when outcome = 'pass' then 1 else 0 end, repetition)
           as pick
  from trial where sweep_id = :sweep and status = 'done'
) ranked where pick <= :per
order by model_id, prompt_id, scenario_id, pick
"""

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#1b1f24}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 8px;border-bottom:1px solid #eee}
th{text-align:left;background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#666}details{margin:4px 0 4px 12px}summary{cursor:pointer}
pre{white-space:pre-wrap;background:#f6f8fa;padding:8px;border-radius:4px;font-size:12px}
.pass{color:#1a7f37}.fail{color:#cf222e}#errors{color:#cf222e;font-weight:bold}
#errors:empty{display:none}
svg text{font:11px system-ui,sans-serif}
"""

SCRIPT = """
(function(){
const errors=document.getElementById('errors');
window.addEventListener('error',e=>{errors.textContent+='script error: '+e.message+'\\n';});
const card=JSON.parse(document.getElementById('card').textContent);
const NS='http://www.w3.org/2000/svg';
function el(name,attrs,parent,txt){const e=document.createElementNS(NS,name);
 for(const k in attrs)e.setAttribute(k,attrs[k]);if(txt!==undefined)e.textContent=txt;
 if(parent)parent.appendChild(e);return e;}
function svg(id,w,h){const s=el('svg',{width:w,height:h,viewBox:'0 0 '+w+' '+h});
 document.getElementById(id).appendChild(s);return s;}
function colour(rate){if(rate===null)return '#eee';const r=Math.round(207-(207-26)*rate),
 g=Math.round(34+(127-34)*rate),b=Math.round(46+(55-46)*rate);return 'rgb('+r+','+g+','+b+')';}
let drawn=0;
// Heatmap: configurations down, tools across.
const tools=[...new Set(card.rows.filter(r=>r.dimension==='tool').map(r=>r.key))].sort();
const configs=card.rows.filter(r=>r.dimension==='config').map(r=>r.model+' / '+r.prompt);
if(tools.length&&configs.length){
 const cw=Math.max(34,Math.min(70,900/tools.length)),left=190,top=110;
 const s=svg('heatmap',left+cw*tools.length+10,top+26*configs.length+10);
 tools.forEach((t,i)=>{el('text',{x:left+i*cw+cw/2,y:top-6,
  transform:'rotate(-40 '+(left+i*cw+cw/2)+' '+(top-6)+')'},s,t);});
 configs.forEach((c,j)=>{el('text',{x:4,y:top+j*26+17},s,c);
  tools.forEach((t,i)=>{const row=card.rows.find(r=>r.dimension==='tool'&&r.key===t&&
   r.model+' / '+r.prompt===c);const rate=row?row.rate:null;
   const rect=el('rect',{x:left+i*cw,y:top+j*26,width:cw-2,height:24,fill:colour(rate)},s);
   el('title',{},rect,t+': '+(row?row.passes+'/'+row.n:'not tested'));
   el('text',{x:left+i*cw+cw/2-12,y:top+j*26+16,fill:'#fff'},s,
    rate===null?'':Math.round(rate*100)+'%');});});
 drawn++;}
// Latency distributions: one bar chart per configuration over the shared bins.
const bins=card.latency_bins;
card.extras.forEach(x=>{const total=x.histogram.reduce((a,b)=>a+b,0);if(!total)return;
 const w=26,s=svg('latency',60+w*x.histogram.length,150);const max=Math.max(...x.histogram);
 el('text',{x:4,y:12},s,x.model+' / '+x.prompt+' ('+total+' trials)');
 x.histogram.forEach((n,i)=>{const h=100*n/max;
  const bar=el('rect',{x:40+i*w,y:120-h,width:w-3,height:h,fill:'#0969da'},s);
  el('title',{},bar,n+' trials '+(i<bins.length?'≤ '+bins[i]+' s':'> '+bins[bins.length-1]+' s'));
  if(i%2===0)el('text',{x:40+i*w,y:136},s,i<bins.length?bins[i]+'s':'more');});
 drawn++;});
// Failure modes: one stacked bar per configuration.
const palette={pass:'#1a7f37',infra_error:'#8c959f',timeout:'#bf8700',format_error:'#8250df',
 no_tool_call:'#fb8f44',wrong_tool:'#cf222e',wrong_params:'#e16f24',wrong_sequence:'#a40e26',
 tool_loop:'#6e7781',output_mismatch:'#d4a72c'};
const cfgRows=card.rows.filter(r=>r.dimension==='config');
if(cfgRows.length){const s=svg('failures',980,40+30*cfgRows.length+20);
 cfgRows.forEach((r,j)=>{const total=Object.values(r.outcomes).reduce((a,b)=>a+b,0);let x=190;
  el('text',{x:4,y:36+j*30+16},s,r.model+' / '+r.prompt);
  Object.entries(r.outcomes).forEach(([o,n])=>{const w=760*n/Math.max(total,1);
   const bar=el('rect',{x:x,y:36+j*30,width:w,height:22,fill:palette[o]||'#444'},s);
   el('title',{},bar,o+': '+n);x+=w;});});
 let lx=190,ly=6;Object.keys(palette).forEach(o=>{const w=o.length*6.3+24;
  if(lx+w>975){lx=190;ly+=14;}el('rect',{x:lx,y:ly,width:10,height:10,fill:palette[o]},s);
  el('text',{x:lx+13,y:ly+9},s,o);lx+=w;});
 drawn++;}
document.body.dataset.charts=drawn;
})();
"""


def _samples(engine: Engine, sweep_id: str) -> dict[tuple[str, str, str], list[Any]]:
    found: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
    with engine.connect() as conn:
        rows = conn.execute(text(SAMPLES_SQL), {"sweep": sweep_id, "per": SAMPLES_PER_CELL})
        for r in rows:
            found[(r.model_id, r.prompt_id, r.scenario_id)].append(r)
    return found


def _transcript(trial: Any) -> str:
    # Setup calls first, marked: the farm made them before the model started.
    parts = [
        f"[setup] {call.get('server')}.{call.get('tool')}({json.dumps(call.get('arguments'))})"
        + ("" if call.get("ok") else f" failed: {call.get('error')}")
        for call in json.loads(trial.setup_json or "[]")
    ]
    for message in json.loads(trial.transcript_json or "[]"):
        who = message.get("role", "?")
        body = message.get("content") or ""
        for call in message.get("tool_calls") or []:
            body += f"\n→ {call.get('name')}({json.dumps(call.get('arguments'))})"
        parts.append(f"[{who}] {body}")
    return html.escape("\n\n".join(parts))


def _table(heads: list[str], rows: list[list[str]], numeric_from: int) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in heads)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{html.escape(c)}</td>'
            if i >= numeric_from
            else f"<td>{html.escape(c)}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _rate_table(card: Scorecard, dimension: str) -> str:
    rows = [
        [r.model, r.prompt, r.key, str(r.n), pct(r.rate), interval(r), secs(r.latency.p95)]
        for r in card.of(dimension)  # type: ignore[arg-type]
    ]
    return _table(["model", "prompt", dimension, "n", "pass", "95% CI", "p95"], rows, 3)


def _drilldown(card: Scorecard, samples: dict[tuple[str, str, str], list[Any]]) -> str:
    out = []
    for row in card.of("scenario"):
        trials = samples.get((row.model, row.prompt, row.key), [])
        state = "pass" if row.n and row.passes == row.n else "fail"
        items = "".join(
            f"<details><summary>repetition {t.repetition}"
            f"{' (paraphrased)' if t.variant else ''}: <b>{html.escape(t.outcome or '')}</b>"
            f" in {secs(t.latency_s)} <span class=muted>{html.escape(t.detail or '')}"
            f"</span></summary><pre>{_transcript(t)}</pre></details>"
            for t in trials
        )
        out.append(
            f'<details id="s-{html.escape(row.model)}-{html.escape(row.prompt)}-'
            f'{html.escape(row.key)}"><summary><span class="{state}">{row.passes}/{row.n}'
            f"</span> {html.escape(row.key)} — {html.escape(row.model)} / "
            f"{html.escape(row.prompt)}</summary>{items}</details>"
        )
    return "".join(out)


def _p(row: Row) -> list[str]:
    return [secs(row.latency.p50), secs(row.latency.p95), secs(row.latency.p99)]


def to_html(card: Scorecard, engine: Engine | None = None) -> str:
    """The report page; with `engine`, sample transcripts are included for the drill-down."""
    samples = _samples(engine, card.sweep_id) if engine is not None else {}
    data = card.model_dump_json().replace("</", "<\\/")
    configs = [
        [r.model, r.prompt, str(r.n), pct(r.rate), interval(r), pass_k(r.pass_hat_k, r.k), *_p(r)]
        for r in card.of("config")
    ]
    note = dash_note(card, speed=False)
    footnote = f'<p class="muted">{html.escape(note)}</p>' if note else ""
    title = html.escape(f"Scorecard {card.sweep_id}")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{STYLE}</style></head>
<body data-charts="0">
<h1>{title}</h1>
<p class="muted">{card.done}/{card.total} trials recorded; rates exclude infra errors; intervals
are Wilson 95%. Built {html.escape(card.built_at)} from sweep
<code>{html.escape(card.provenance.sweep_name)}</code>.</p>
<pre id="errors"></pre>
<h2>Pass rate per model × prompt config</h2>
{_table(["model", "prompt", "n", "pass", "95% CI", "pass^k", "p50", "p95", "p99"], configs, 2)}
{footnote}
<h2>Pass rate per tool (heatmap)</h2><div id="heatmap"></div>
<h2>Trial latency distribution</h2><div id="latency"></div>
<h2>Outcomes</h2><div id="failures"></div>{answers_section(card, _table)}
<h2>Per tier</h2>{_rate_table(card, "tier")}
<h2>Verbatim vs paraphrased</h2>{_rate_table(card, "phrasing")}
<h2>Scenarios and sample transcripts</h2>
<p class="muted">Up to {SAMPLES_PER_CELL} trials per scenario and configuration, failures
first.</p>
{_drilldown(card, samples)}
<script type="application/json" id="card">{data}</script>
<script>{SCRIPT}</script>{answers_script(card)}
</body></html>
"""
