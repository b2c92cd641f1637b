"""A text-mode web browser over a small local website, fetched over real HTTP.

The server serves the fixture site (scenarios/fixtures/site, one folder per host name) from a
loopback HTTP server it starts itself, and maps friendly addresses such as
`https://docs.kestrel.test/changelog` onto it, so every trial sees the same pages and nothing
leaves the machine. Every tool takes the page's address and keeps no state between calls:
a warm server lent to the next trial cannot leak anything from the last one.

`get_page_source` and `extract_links_from_text` are near misses: plausible names whose
behaviour does not fit the everyday requests of the suites.
"""

from __future__ import annotations

import argparse
import logging
import mimetypes
import re
import threading
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import httpx
from mcp.types import ToolAnnotations

from mcp_farm.scenarios.servers._sdk import (
    MCPServer,
    ToolError,
    serve,
)

# Nothing here changes state, so the farm never needs to reset this server between trials.
READ_ONLY = ToolAnnotations(read_only_hint=True)
HOME = "https://docs.kestrel.test/"
BLOCKS = {"p", "div", "li", "tr", "ul", "ol", "table", "main", "footer", "section", "br"}
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
URL_IN_TEXT = re.compile(r"https?://[^\s<>\"')\]]+")


class _SiteServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path) -> None:
        self.root = root
        super().__init__(("127.0.0.1", 0), _SiteHandler)


class _SiteHandler(BaseHTTPRequestHandler):
    """GET /<host>/<path>: the file for that page, trying `<path>.html` and `<path>/index.html`."""

    server: _SiteServer

    def do_GET(self) -> None:
        host, _, path = urlsplit(self.path).path.lstrip("/").partition("/")
        found = _page_file(self.server.root, host, unquote(path))
        if found is None:
            self.send_error(404, "Not Found")
            return
        body = found.read_bytes()
        kind = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
        self.send_response(200)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: stderr of a stdio server is the farm's server log, not an access log."""


def _page_file(root: Path, host: str, path: str) -> Path | None:
    parts = [p for p in path.split("/") if p]
    if not host or any(p.startswith(".") for p in [host, *parts]):
        return None
    target = root.joinpath(host, *parts)
    if path.endswith("/") or not parts:
        candidates = [target / "index.html"]
    else:
        candidates = [target, target.with_name(target.name + ".html"), target / "index.html"]
    return next((c for c in candidates if c.is_file()), None)


@dataclass
class Page:
    """A fetched page, read the way a text browser shows it."""

    url: str
    html: str
    title: str = ""
    headings: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    """(link text, absolute address), in page order, navigation included."""
    lines: list[str] = field(default_factory=list)
    """The readable text, without the navigation menu."""

    def text(self) -> str:
        return f"{self.url}\nTitle: {self.title}\n\n" + "\n".join(self.lines)


class _Reader(HTMLParser):
    """Collects a page's title, headings, links and readable lines."""

    def __init__(self, page: Page) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self._buf: list[str] = []
        self._prefix = ""
        self._skip = 0  # inside <script>, <style> or <head> (apart from <title>)
        self._nav = 0
        self._in_title = False
        self._href: str | None = None
        self._link_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "head"):
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag == "nav":
            self._nav += 1
        elif tag == "a":
            self._href = dict(attrs).get("href")
            self._link_text = []
        elif tag in ("td", "th") and "".join(self._buf).strip():
            self._buf.append(" | ")
        elif tag in BLOCKS or tag in HEADINGS:
            self._flush()
            if tag == "li":
                self._prefix = "- "
            elif tag in HEADINGS:
                self._prefix = "#" * int(tag[1]) + " "

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "head"):
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False
        elif tag == "nav":
            self._nav = max(0, self._nav - 1)
        elif tag == "a" and self._href is not None:
            text = " ".join("".join(self._link_text).split())
            self.page.links.append((text, urljoin(self.page.url, self._href)))
            self._href = None
        elif tag in HEADINGS:
            self.page.headings.append(" ".join("".join(self._buf).split()))
            self._flush()
        elif tag in BLOCKS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.page.title += " ".join(data.split())
            return
        if self._skip:
            return
        if self._href is not None:
            self._link_text.append(data)
        if not self._nav:
            self._buf.append(data)

    def close(self) -> None:
        super().close()
        self._flush()

    def _flush(self) -> None:
        text = " ".join("".join(self._buf).split())
        if text:
            self.page.lines.append(self._prefix + text)
        self._buf = []
        self._prefix = ""


class Browser:
    """Fetches pages of the fixture site through its loopback HTTP server."""

    def __init__(self, site: Path) -> None:
        self.site = site.resolve()
        self._http = _SiteServer(self.site)
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    def address(self, url: str) -> tuple[str, str]:
        """(host, path) of an address; `docs.kestrel.test/faq` and `/faq` are accepted too."""
        text = (url or "").strip()
        if not text:
            raise ToolError(f"give a web address, e.g. {HOME}")
        if text.startswith("/"):
            text = HOME.rstrip("/") + text
        if "://" not in text:
            text = "https://" + text
        parts = urlsplit(text)
        if parts.scheme not in ("http", "https"):
            raise ToolError(f"cannot open {parts.scheme}: addresses in the browser")
        host = (parts.hostname or "").lower()
        if not host or host.startswith(".") or not (self.site / host).is_dir():
            raise ToolError(f"could not resolve host {host or url!r}: the site cannot be reached")
        return host, parts.path or "/"

    def fetch(self, url: str) -> Page:
        host, path = self.address(url)
        port = self._http.server_address[1]
        try:
            response = httpx.get(f"http://127.0.0.1:{port}/{host}{path}", timeout=10)
        except httpx.HTTPError as exc:  # the loopback server is ours: this is a protocol failure
            raise RuntimeError(f"the local web server did not answer: {exc}") from exc
        shown = f"https://{host}{path}"
        if response.status_code == 404:
            raise ToolError(f"404 Not Found: {shown}")
        response.raise_for_status()
        page = Page(url=shown, html=response.text)
        reader = _Reader(page)
        reader.feed(response.text)
        reader.close()
        return page

    def bookmarks(self) -> list[str]:
        rows = (self.site / "bookmarks.txt").read_text(encoding="utf-8").splitlines()
        return [row.replace("\t", " — ") for row in rows if row.strip()]


def _pick_link(page: Page, wanted: str) -> tuple[str, str]:
    """The link whose text is `wanted` (ignoring case), else the one link that contains it."""
    key = " ".join(wanted.lower().split())
    if not key:
        raise ToolError("say which link to follow, by its text")
    exact = [link for link in page.links if link[0].lower() == key]
    if exact:
        return exact[0]
    partial = list(dict.fromkeys(link for link in page.links if key in link[0].lower()))
    if len(partial) == 1:
        return partial[0]
    if partial:
        names = "; ".join(text for text, _url in partial)
        raise ToolError(f"several links on {page.url} match {wanted!r}: {names}")
    raise ToolError(f"no link on {page.url} reads {wanted!r}; use find_links to see them")


def build(site: Path) -> MCPServer:
    # httpx logs every request at INFO; the farm keeps a stdio server's stderr as its log.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    browser = Browser(site)
    server = MCPServer(
        "browser",
        instructions=f"A web browser. The Kestrel documentation site is at {HOME}.",
    )

    @server.tool(annotations=READ_ONLY)
    def navigate(url: str) -> str:
        """Open a web page and show it at a glance: its title, its headings and how many links
        it has. Use get_page_text to read the whole page."""
        page = browser.fetch(url)
        outline = "\n".join(f"- {h}" for h in page.headings) or "(no headings)"
        return (
            f"Opened {page.url}\nTitle: {page.title}\n\nHeadings:\n{outline}\n\n"
            f"{len(page.links)} links on the page."
        )

    @server.tool(annotations=READ_ONLY)
    def get_page_text(url: str) -> str:
        """Read a web page: its full readable text, without the site's navigation menu."""
        return browser.fetch(url).text()

    @server.tool(annotations=READ_ONLY)
    def find_links(url: str, contains: str = "") -> str:
        """List the links on a web page as "link text -> address". With `contains`, only links
        whose text or address includes those words."""
        page = browser.fetch(url)
        words = contains.lower().split()
        rows = [
            f"{text or '(no text)'} -> {href}"
            for text, href in page.links
            if all(w in f"{text} {href}".lower() for w in words)
        ]
        return "\n".join(dict.fromkeys(rows)) if rows else f"no links on {page.url} match"

    @server.tool(annotations=READ_ONLY)
    def click_link(url: str, link_text: str) -> str:
        """On the page at `url`, follow the link with this text and return the page it leads
        to (its address, title and readable text)."""
        page = browser.fetch(url)
        text, target = _pick_link(page, link_text)
        if target.startswith("mailto:"):
            raise ToolError(f"the link {text!r} opens an email to {target[7:]}, not a page")
        return f"Followed {text!r}.\n" + browser.fetch(target).text()

    @server.tool(annotations=READ_ONLY)
    def list_bookmarks() -> str:
        """The pages the user has bookmarked, as "name — address"."""
        return "\n".join(browser.bookmarks())

    # ---- near misses: plausible names, behaviour that does not fit everyday requests

    @server.tool(annotations=READ_ONLY)
    def get_page_source(url: str) -> str:
        """Return the raw HTML markup of a web page, tags and scripts included, for debugging
        how the page is built."""
        return browser.fetch(url).html

    @server.tool(annotations=READ_ONLY)
    def extract_links_from_text(text: str) -> str:
        """Pick out the web addresses that appear in a piece of text you already have.
        Fetches nothing."""
        found = list(dict.fromkeys(u.rstrip(".,;:!?") for u in URL_IN_TEXT.findall(text)))
        return "\n".join(found) if found else "no web addresses in the text"

    return server


def _args(parser: argparse.ArgumentParser) -> None:
    default = Path(__file__).resolve().parent.parent / "fixtures" / "site"
    parser.add_argument("--site", type=Path, default=default, help="one folder per host name")


if __name__ == "__main__":
    serve(lambda a: build(a.site), add_args=_args)
