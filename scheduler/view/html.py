"""The explorer's HTML pieces: the page frame, escaped text, tables and links. Everything a model,
a server or a user wrote reaches the page through `e()`, which also shows
what would hide (scheduler/report/visible.py); no page carries a script."""

from __future__ import annotations

import html
from urllib.parse import quote, urlencode

from mcp_farm.scheduler.report.cells import pct, secs
from mcp_farm.scheduler.report.visible import visible

__all__ = ["e", "frame", "link", "pct", "secs", "table", "url"]


def e(value: object) -> str:
    """Any value as text safe inside an element or a quoted attribute, with every invisible or
    direction-changing character written as its escape (scheduler/report/visible.py)."""
    return html.escape(visible("" if value is None else str(value)), quote=True)


def url(path: str, query: dict[str, str] | None = None) -> str:
    """A path (its parts quoted) with a query string."""
    quoted = "/".join(quote(part, safe="") for part in path.split("/"))
    return quoted + (f"?{urlencode(query)}" if query else "")


def link(href: str, text: object, css: str = "") -> str:
    cls = f' class="{e(css)}"' if css else ""
    return f'<a href="{e(href)}"{cls}>{e(text)}</a>'


def table(heads: list[str], rows: list[list[str]], numeric_from: int = 99) -> str:
    """A table of cells that are already HTML (escape them with e() or link())."""
    head = "".join(f"<th>{e(h)}</th>" for h in heads)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{c}</td>' if i >= numeric_from else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def frame(
    title: str, body: str, *, crumbs: list[tuple[str, str]] | None = None, refresh_s: int = 0
) -> str:
    """A whole page. `refresh_s`: reload every so many seconds (a sweep still running)."""
    trail = " › ".join([link("/", "sweeps"), *(link(h, t) for h, t in crumbs or [])])
    meta = f'<meta http-equiv="refresh" content="{int(refresh_s)}">' if refresh_s else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">{meta}<title>{e(title)}</title>
<link rel="stylesheet" href="/static/view.css"><link rel="icon" href="/static/icon.svg"></head>
<body><nav>{trail}</nav><h1>{e(title)}</h1>
{body}
</body></html>
"""
