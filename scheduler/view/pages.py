"""The explorer's list pages: the sweeps with their progress, a sweep's scorecard with every cell
a link to its trials, and a filtered, sorted, paged list of trials."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, get_args

from mcp_farm.scheduler.report.cells import (
    CONVERSATION_HEADS,
    USER_HEADS,
    VARIANCE_HEADS,
    VARIANCE_NOTE,
    conversation_cells,
    interval,
    user_cells,
    user_notes,
    variance_rows,
)
from mcp_farm.scheduler.report.html.curves import curves_section, selection_section
from mcp_farm.scheduler.view.cards import REBUILD_S
from mcp_farm.scheduler.view.filters import NUMBERED_PAGES, Sort, TrialFilter, Wording, YesNo
from mcp_farm.scheduler.view.html import e, frame, link, pct, secs, table, url
from mcp_farm.schema import OUTCOMES
from mcp_farm.schema.vocab import Tier, TrialStatus

if TYPE_CHECKING:
    from mcp_farm.scheduler.view.cards import Built
    from mcp_farm.scheduler.view.queries import SweepLine, TrialPage
    from mcp_farm.schema.scorecard import Row, Scorecard

REFRESH_S = 5
"""How often a page showing a running sweep's progress reloads itself."""
LIVE_CARD_REFRESH_S = int(REBUILD_S)
"""How often a running sweep's scorecard page reloads: its card changes no faster (cards.py),
and each reload keeps its card no older than that plus one build."""
TABLE_ROWS = 100
"""Rows of a scorecard table on one sweep page; a longer table (per scenario, at a million
trials a thousand rows) is paged, so the page stays light however big the sweep."""
DIMENSIONS = (
    ("config", "Per model × configuration"),
    ("tool", "Per tool"),
    ("tier", "Per tier"),
    ("phrasing", "Verbatim vs paraphrased"),
    ("scenario", "Per scenario"),
)


def _progress(s: SweepLine) -> str:
    share = s.done / s.total if s.total else 1.0
    bar = f'<progress max="{s.total}" value="{s.done}"></progress>'
    state = "running" if s.live else ("cancelled" if s.status == "cancelled" else "finished")
    return f"{bar} {s.done}/{s.total} ({pct(share)}) <span class={e(state)}>{e(state)}</span>"


def sweeps_page(lines: list[SweepLine]) -> str:
    """Every sweep, newest first; reloads itself while any is running."""
    rows = [
        [
            link(url(f"/sweeps/{s.sweep_id}"), s.sweep_id),
            e(s.name),
            e(str(s.created_at)[:19]),
            _progress(s),
            e(s.running),
            e(s.pending),
        ]
        for s in lines
    ]
    body = (
        table(["sweep", "name", "created", "progress", "running", "pending"], rows, 4)
        if rows
        else "<p>No sweep recorded in this database yet.</p>"
    )
    live = any(s.live for s in lines)
    return frame("Sweeps", body, refresh_s=REFRESH_S if live else 0)


def _trials_url(sweep_id: str, **query: str) -> str:
    return url(f"/sweeps/{sweep_id}/trials", query)


def _cell_query(row: Row) -> dict[str, str]:
    """The filter that selects a scorecard row's trials."""
    query = {"model": row.model, "config": row.prompt}
    key = {"tool": "tool", "tier": "tier", "scenario": "scenario", "phrasing": "wording"}
    if row.dimension in key:
        query[key[row.dimension]] = row.key
    return query


def _table_pager(sweep_id: str, dimension: str, page: int, count: int) -> str:
    """`rows 101–200 of 1,000 · ‹ previous · next ›` under a paged table; nothing for a short
    one."""
    if count <= TABLE_ROWS:
        return ""
    first, last = (page - 1) * TABLE_ROWS + 1, min(page * TABLE_ROWS, count)
    parts = [f"rows {first:,}–{last:,} of {count:,}" if first <= count else f"of {count:,} rows"]
    here = f"/sweeps/{sweep_id}"
    if page > 1:
        back = {f"{dimension}_page": str(page - 1)} if page > 2 else None
        parts.append(link(url(here, back) + f"#{dimension}", "‹ previous"))
    if last < count:
        parts.append(
            link(url(here, {f"{dimension}_page": str(page + 1)}) + f"#{dimension}", "next ›")
        )
    return f'<p class="pager">{" · ".join(parts)}</p>'


def _rows_table(card: Scorecard, dimension: str, page: int = 1) -> str:
    rows = []
    # The trials a count counts: with the sweep's `left_cassette: exclude`, none that left it.
    counted = {"left_cassette": "no"} if card.left_cassette == "exclude" else {}
    every = card.of(dimension)  # type: ignore[arg-type]
    for r in every[(page - 1) * TABLE_ROWS : page * TABLE_ROWS]:
        query = _cell_query(r) | counted
        failures = ", ".join(
            link(_trials_url(card.sweep_id, **query, outcome=o), f"{o} {n}")
            for o, n in sorted(r.outcomes.items(), key=lambda kv: -kv[1])
            if o != "pass" and n
        )
        if r.other_path:
            # Not a failure: the state passed by another path (docs/state.md); said beside them.
            other = link(
                _trials_url(card.sweep_id, **query, other_path="yes"), f"other path {r.other_path}"
            )
            failures = f"{failures}, {other}" if failures else other
        rows.append(
            [
                e(r.model),
                e(r.prompt),
                e(r.key),
                # n counts graded trials only: not those still to run, nor infra errors.
                link(_trials_url(card.sweep_id, **query, graded="yes"), r.n),
                link(_trials_url(card.sweep_id, **query, outcome="pass"), pct(r.rate)),
                e(pct(r.first_rate)),
                e(interval(r)),
                e(secs(r.latency.p50)),
                e(secs(r.latency.p95)),
                failures or "–",
            ]
        )
    heads = ["model", "config", dimension, "n", "pass", "1st try", "95% CI", "p50", "p95"]
    pager = _table_pager(card.sweep_id, dimension, page, len(every))
    return table([*heads, "failures"], rows, 3) + pager


def _config_table(rows: list[list[str]], heads: list[str]) -> str:
    """Plain cells (escaped here), model and configuration first."""
    return table(["model", "config", *heads], [[e(c) for c in r] for r in rows], 2)


def _conversation_sections(card: Scorecard) -> list[str]:
    """The conversation block (turn and conversation pass rates) and the simulated-user block
    (pass rates with and without user errors, the agent × user variance), as `farm report`
    shows them; nothing for a sweep without either."""
    found = []
    if card.conversations:
        rows = [[c.model, c.prompt, *conversation_cells(c)] for c in card.conversations]
        found.append(f"<h2>Conversations</h2>{_config_table(rows, CONVERSATION_HEADS)}")
    if card.simulated_users:
        rows = [[u.model, u.prompt, *user_cells(u)] for u in card.simulated_users]
        notes = "".join(f"<p class=muted>{e(n)}</p>" for n in user_notes(card))
        found.append(f"<h2>Simulated users</h2>{_config_table(rows, USER_HEADS)}{notes}")
        if split := variance_rows(card):
            found.append(
                f"<h3>Agent × user variance</h3>{_config_table(split, VARIANCE_HEADS)}"
                f"<p class=muted>{e(VARIANCE_NOTE)}</p>"
            )
    return found


def _escaped_table(heads: list[str], rows: list[list[str]], numeric_from: int) -> str:
    return table(heads, [[e(c) for c in r] for r in rows], numeric_from)


def _tool_list_sections(card: Scorecard) -> list[str]:
    """The tool-list axis (pass rate against tool count, with its charts) and the tool
    selection table, as the HTML report shows them; nothing for a sweep without either."""
    return [
        s
        for s in (curves_section(card, _escaped_table), selection_section(card, _escaped_table))
        if s
    ]


def sweep_page(line: SweepLine, built: Built | None, pages: dict[str, int] | None = None) -> str:
    """The sweep's progress, counted now, and its scorecard as last built (cards.py): the
    numbers of `farm report`, as links, each table TABLE_ROWS rows at a time (`pages`: the
    page of each table by dimension). A running sweep's page reloads itself."""
    sweep_id = line.sweep_id
    trials = link(_trials_url(sweep_id), "all trials")
    sections = [f"<p>{_progress(line)} · {trials}</p>"]
    if built is None:
        sections.append(
            "<p class=muted>The scorecard is being built; this page reloads itself until it "
            "is there.</p>"
        )
    else:
        card = built.card
        age = max(0, int(time.monotonic() - built.at))
        as_of = (
            f"as of {card.done:,}/{card.total:,} trials recorded, built {age} s ago"
            if line.live
            else ""
        )
        sections.append(
            f"<p class=muted>Scorecard {e(as_of)}{'; ' if as_of else ''}rates exclude infra "
            "and harness errors; intervals are Wilson 95%. Every count links to its trials."
            f"{' While the sweep runs it is rebuilt every ' if line.live else ''}"
            f"{f'{int(REBUILD_S)} s this page is open.' if line.live else ''}</p>"
        )
        for dimension, title in DIMENSIONS:
            page = (pages or {}).get(dimension, 1)
            sections.append(
                f'<h2 id="{e(dimension)}">{e(title)}</h2>{_rows_table(card, dimension, page)}'
            )
            if dimension == "config":
                sections += _conversation_sections(card) + _tool_list_sections(card)
    waiting = built is None
    return frame(
        f"Sweep {sweep_id}",
        "\n".join(sections),
        crumbs=[(url(f"/sweeps/{sweep_id}"), sweep_id)],
        refresh_s=REFRESH_S if waiting else (LIVE_CARD_REFRESH_S if line.live else 0),
    )


def _select(name: str, choices: tuple[str, ...], chosen: str | None) -> str:
    options = [f'<option value=""{"" if chosen else " selected"}>any</option>']
    options += [
        f'<option value="{e(c)}"{" selected" if c == chosen else ""}>{e(c)}</option>'
        for c in choices
    ]
    return f'<label>{e(name)} <select name="{e(name)}">{"".join(options)}</select></label>'


def _text(name: str, value: str | None) -> str:
    return f'<label>{e(name)} <input name="{e(name)}" value="{e(value or "")}"></label>'


def _filter_form(sweep_id: str, f: TrialFilter) -> str:
    fields = [
        _text("model", f.model),
        _text("config", f.config),
        _text("scenario", f.scenario),
        _select("tier", get_args(Tier), f.tier),
        _text("tool", f.tool),
        _select("wording", get_args(Wording), f.wording),
        _select("outcome", OUTCOMES, f.outcome),
        _select("status", get_args(TrialStatus), f.status),
        _select("first_try", get_args(YesNo), f.first_try),
        _text("route", f.route),
        _select("left_cassette", get_args(YesNo), f.left_cassette),
        _select("other_path", get_args(YesNo), f.other_path),
        _select("graded", get_args(YesNo), f.graded),
        _text("scoring", f.scoring),
        _text("search", f.search),
        _select("sort", get_args(Sort), f.sort),
    ]
    action = url(f"/sweeps/{sweep_id}/trials")
    return (
        f'<form method="get" action="{e(action)}" class="filters">{"".join(fields)}'
        '<button type="submit">filter</button></form>'
    )


def _pager(sweep_id: str, f: TrialFilter, page: TrialPage) -> str:
    parts = [page.summary()]
    if page.page > 1:
        parts.append(link(_trials_url(sweep_id, **pager_query(f, page, -1)), "‹ previous"))
    if page.has_next:
        parts.append(link(_trials_url(sweep_id, **pager_query(f, page, +1)), "next ›"))
    return f'<p class="pager">{" · ".join(parts)}</p>'


def pager_query(f: TrialFilter, page: TrialPage, step: int) -> dict[str, str]:
    """The query of the page before (`step` -1) or after (+1) `page`: it starts from this
    page's first or last trial (keyset), so a deep page costs what the second does."""
    number = page.page + step
    if number == 1 or not page.rows:
        # The first page has nothing before it; past the end, back to where numbers work.
        return f.query(page=min(number, NUMBERED_PAGES)) if number > 1 else f.query()
    if step > 0:
        return f.query(page=number, after=page.rows[-1].trial_id)
    return f.query(page=number, before=page.rows[0].trial_id)


def trials_page(sweep_id: str, f: TrialFilter, page: TrialPage, *, live: bool) -> str:
    """One page of the trials a filter selects, with the filter as a form."""
    rows = [
        [
            link(url(f"/trials/{t.trial_id}"), t.trial_id[:12]),
            e(t.model_id),
            e(t.config),
            e(t.scenario_id),
            e(t.repetition),
            e("paraphrased" if t.variant else "verbatim"),
            f'<span class="{e(t.outcome or t.status)}">{e(t.outcome or t.status)}</span>',
            e({True: "yes", False: "no"}.get(t.first_try, "–")),
            e(secs(t.latency_s)),
            e((t.detail or "")[:160]),
        ]
        for t in page.rows
    ]
    heads = ["trial", "model", "config", "scenario", "rep", "wording", "outcome", "1st try"]
    body = _filter_form(sweep_id, f) + _pager(sweep_id, f, page)
    body += table([*heads, "latency", "detail"], rows, 8) if rows else "<p>No trial matches.</p>"
    return frame(
        f"Trials of {sweep_id}",
        body,
        crumbs=[(url(f"/sweeps/{sweep_id}"), sweep_id), (_trials_url(sweep_id), "trials")],
        refresh_s=REFRESH_S if live else 0,
    )


def error_page(status: int, message: str) -> str:
    return frame(f"{status}", f'<p class="error">{e(message)}</p>')
