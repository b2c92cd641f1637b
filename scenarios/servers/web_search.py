"""Web search over a fixed local corpus of pages, ranked by BM25, plus fetching a page's text.

The corpus is a folder of markdown pages, each opening with a front matter block that gives its
title, url, date and kind (release, blog, news, howto, docs, event). Nothing leaves the machine,
and the same query always gives the same ranking, so scenarios can name the one right page.
"""

from __future__ import annotations

import argparse
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from mcp.types import ToolAnnotations

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    serve,
)

READ_ONLY = ToolAnnotations(read_only_hint=True)
WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)*")
STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "at",
        "be",
        "by",
        "can",
        "do",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "the",
        "to",
        "what",
    ]
)
ARCHIVED_ON = "2026-01-15"
"""The cached copies of `fetch_cached` were taken on this date; later pages have none."""
K1, B = 1.2, 0.5


@dataclass(frozen=True)
class Page:
    title: str
    url: str
    date: str
    kind: str
    body: str


def _words(text: str) -> list[str]:
    return [w for w in WORD.findall(text.lower()) if w not in STOP]


def url_key(url: str) -> str:
    """`https://www.x.dev/a/`, `http://x.dev/a?utm=1` and `x.dev/a` all name the same page."""
    text = url.strip().lower().split("#", 1)[0].split("?", 1)[0]
    text = re.sub(r"^[a-z]+://", "", text)
    return text.removeprefix("www.").rstrip("/")


def parse_page(text: str, source: str) -> Page:
    """A page file: `---`, `key: value` lines, `---`, then the body."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---" or "---" not in lines[1:]:
        raise ValueError(f"{source}: a page must open with a --- front matter block")
    end = lines.index("---", 1)
    meta = dict(line.split(": ", 1) for line in lines[1:end])
    missing = {"title", "url", "date", "kind"} - set(meta)
    if missing:
        raise ValueError(f"{source}: front matter lacks {', '.join(sorted(missing))}")
    body = "\n".join(lines[end + 1 :]).strip()
    return Page(meta["title"], meta["url"], meta["date"], meta["kind"], body)


def load_corpus(folder: Path) -> list[Page]:
    return [parse_page(p.read_text(encoding="utf-8"), p.name) for p in sorted(folder.glob("*.md"))]


class Index:
    """BM25 over title (counted twice: a title hit matters more) and body."""

    def __init__(self, pages: list[Page]) -> None:
        self.pages = pages
        self.terms = [Counter(_words(f"{p.title} {p.title} {p.body}")) for p in pages]
        self.lengths = [sum(t.values()) for t in self.terms]
        self.avg = sum(self.lengths) / max(1, len(pages))
        df: Counter[str] = Counter()
        for t in self.terms:
            df.update(t.keys())
        n = len(pages)
        self.idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}

    def rank(self, query: str, pages: list[Page] | None = None) -> list[tuple[float, Page]]:
        words = set(_words(query))
        if not words:
            raise ToolError("the query has no words to search for")
        allowed = None if pages is None else {id(p) for p in pages}
        scored = []
        for page, tf, length in zip(self.pages, self.terms, self.lengths, strict=True):
            if allowed is not None and id(page) not in allowed:
                continue
            norm = K1 * (1 - B + B * length / self.avg)
            score = sum(self.idf[w] * tf[w] * (K1 + 1) / (tf[w] + norm) for w in words if w in tf)
            if score > 0:
                scored.append((score, page))
        # Ties go to the newer page, then the url, so the order never depends on the file system.
        scored.sort(key=lambda s: (-round(s[0], 6), _neg_date(s[1].date), s[1].url))
        return scored


def _neg_date(date: str) -> str:
    return "".join(chr(255 - ord(c)) for c in date)


def snippet(page: Page, query: str, width: int = 220) -> str:
    """The first sentence of the body sharing the most words with the query."""
    words = set(_words(query))
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", page.body) if s.strip()]
    if not sentences:
        return ""
    best = max(sentences, key=lambda s: len(words & set(_words(s))))
    return best if len(best) <= width else best[: width - 1].rstrip() + "…"


def show(page: Page) -> str:
    return f"Title: {page.title}\nURL: {page.url}\nPublished: {page.date}\n\n{page.body}"


def build(corpus: Path) -> MCPServer:
    pages = load_corpus(corpus)
    index = Index(pages)
    by_url = {url_key(p.url): p for p in pages}
    server = MCPServer("web_search", instructions="Search the web and read web pages.")

    @server.tool(annotations=READ_ONLY)
    def search(query: str, limit: int = 5) -> str:
        """Search the web; returns the best-matching pages (title, date, URL, snippet), best first.

        Use fetch to read a whole page.
        """
        hits = index.rank(query)[: max(1, min(limit, 10))]
        if not hits:
            return f"no web results for {query!r}"
        return "\n\n".join(
            f"{i}. {p.title} ({p.date})\n   {p.url}\n   {snippet(p, query)}"
            for i, (_score, p) in enumerate(hits, 1)
        )

    @server.tool(annotations=READ_ONLY)
    def fetch(url: str) -> str:
        """Download a web page by its URL and return its current text (title, date, body)."""
        page = by_url.get(url_key(url))
        if page is None:
            raise ToolError(f"404 Not Found: {url}")
        return show(page)

    @server.tool(annotations=READ_ONLY)
    def search_news(query: str) -> str:
        """Search news headlines only; returns headline, source site and date, without URLs.

        Blog posts, documentation and release pages are not included.
        """
        news = [p for p in pages if p.kind == "news"]
        hits = index.rank(query, news)[:5]
        if not hits:
            return f"no news headlines match {query!r}"
        return "\n".join(f"{p.title} — {url_key(p.url).split('/')[0]} ({p.date})" for _s, p in hits)

    @server.tool(annotations=READ_ONLY)
    def fetch_cached(url: str) -> str:
        """Return the search engine's archived copy of a web page by its URL (may be out of date).

        The snapshot was taken when the page was last crawled, not now.
        """
        page = by_url.get(url_key(url))
        if page is None or page.date > ARCHIVED_ON:
            raise ToolError(
                f"no archived copy of {url} (the archive was last crawled {ARCHIVED_ON})"
            )
        return f"[archived copy, crawled {ARCHIVED_ON}]\n{show(page)}"

    return server


def _args(parser: argparse.ArgumentParser) -> None:
    default = Path(__file__).resolve().parent.parent / "fixtures" / "web"
    parser.add_argument("--corpus", type=Path, default=default)


if __name__ == "__main__":
    serve(lambda a: build(a.corpus), add_args=_args)
