"""`farm view`: the trial explorer as a Starlette app over the results database, read only.

Every response carries a content security policy that allows no script at all and styles only
from this app (`/static/view.css`, a package file); every text a model, a server or a user wrote
is escaped (scheduler/view/html.py), Starlette's own error responses included. It listens on
loopback; anywhere else needs a password, asked for with HTTP basic auth on every request. It
answers only requests addressed to a name it serves (loopback names and the address it was
told to listen on): a page of another site that rebinds its own name to 127.0.0.1 gets a
refusal, not the results."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import secrets
from importlib.resources import files
from typing import TYPE_CHECKING

from sqlalchemy.exc import OperationalError, ProgrammingError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_farm.scheduler.view.cards import Cards
from mcp_farm.scheduler.view.filters import FilterError, TrialFilter, checked_text, quoted
from mcp_farm.scheduler.view.pages import (
    DIMENSIONS,
    error_page,
    sweep_page,
    sweeps_page,
    trials_page,
)
from mcp_farm.scheduler.view.queries import sweep_lines, trial_page, trial_record
from mcp_farm.scheduler.view.readable import unreadable
from mcp_farm.scheduler.view.trial_page import compare_page
from mcp_farm.scheduler.view.trial_page import trial_page as one_trial_page
from mcp_farm.schema import FarmError
from mcp_farm.schema.redact import REMEMBER_MIN_CHARS

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

CSP = (
    "default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
"""No script runs on any page, inline or not; styles come only from this app."""
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
STYLE = files(__package__).joinpath("view.css").read_text(encoding="utf-8")
ICON = files(__package__).joinpath("icon.svg").read_text(encoding="utf-8")
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("0.0.0.0", "::", "")
"""Addresses that listen on every interface: the names it is reached by are not known here,
and a password guards it (check_bind), which a rebinding page cannot send."""


class ViewError(FarmError):
    """`farm view` cannot start as asked (no password for a public address)."""


def is_loopback(host: str) -> bool:
    """Whether `host` is a loopback address or `localhost`."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name in a Host header, without its port, brackets or final dot, lower case."""
    name = header.strip().lower()
    if name.startswith("["):
        name = name[1 : name.find("]")] if "]" in name else name[1:]
    elif name.count(":") == 1:
        name = name.rsplit(":", 1)[0]
    return name.rstrip(".")


def serves(header: str, host: str) -> bool:
    """Whether a request with Host `header` is addressed to an explorer listening on `host`:
    a loopback name or address, or the address it listens on; with a wildcard, any."""
    if host_name(host) in WILDCARDS:
        return True
    name = host_name(header)
    return bool(name) and (is_loopback(name) or name == host_name(host))


def check_bind(host: str, password: str | None) -> None:
    """Refuse to listen beyond loopback without a password, and a password too short to be
    masked in logs (schema/redact.py)."""
    if password and len(password) < REMEMBER_MIN_CHARS:
        raise ViewError(f"FARM_VIEW_PASSWORD needs at least {REMEMBER_MIN_CHARS} characters")
    if not is_loopback(host) and not password:
        raise ViewError(
            f"farm view --host {host}: listening beyond loopback needs a password; set "
            "FARM_VIEW_PASSWORD (and optionally FARM_VIEW_USER), or keep the default "
            "127.0.0.1 and reach it through an SSH tunnel"
        )


def table_pages(query: dict[str, str]) -> dict[str, int]:
    """The page of each scorecard table a sweep page's query asks for (`scenario_page=3`); a
    FilterError for any other parameter or a page that is no whole number from 1."""
    pages = {}
    for key, value in query.items():
        dimension = key.removesuffix("_page")
        if dimension not in {d for d, _ in DIMENSIONS} or key == dimension:
            raise FilterError(f"query: {quoted(key)}: a sweep page takes only TABLE_page=N")
        if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= 10**6:
            raise FilterError(f"query: {key}={quoted(value)}: a page number from 1")
        pages[dimension] = int(value)
    return pages


def _page(html: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def _authorised(request: Request, user: str, password: str) -> bool:
    scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        given_user, _, given = base64.b64decode(encoded).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return False
    # Both compared in constant time, and both always compared.
    same_user = secrets.compare_digest(given_user.encode(), user.encode())
    same_password = secrets.compare_digest(given.encode(), password.encode())
    return same_user and same_password


def create_app(
    engine: Engine,
    *,
    user: str = "farm",
    password: str | None = None,
    host: str = "127.0.0.1",
    cards: Cards | None = None,
) -> Starlette:
    """The explorer over `engine` (opened read only by the caller), listening on `host`. The
    handlers that read the database are plain functions: Starlette runs them in its thread
    pool, so one slow query holds up its own request, not every other."""
    scorecards = cards or Cards(engine)

    def refused(exc: FilterError) -> Response:
        return _page(error_page(400, str(exc)), 400)

    def sweeps(_: Request) -> Response:
        return _page(sweeps_page(sweep_lines(engine=engine)))

    def sweep(request: Request) -> Response:
        try:
            sweep_id = checked_text(request.path_params["sweep_id"], name="sweep", source="path")
            pages = table_pages(dict(request.query_params))
        except FilterError as exc:
            return refused(exc)
        found = sweep_lines(engine=engine, sweep_id=sweep_id)
        if not found:
            return _page(error_page(404, f"no sweep {sweep_id!r} in this database"), 404)
        # Progress from counts, now; the card as last built (cards.py), never built per request.
        line = found[0]
        built = scorecards.card(sweep_id, line.done, live=line.live, total=line.total)
        return _page(sweep_page(line, built, pages))

    def trials(request: Request) -> Response:
        try:
            sweep_id = checked_text(request.path_params["sweep_id"], name="sweep", source="path")
            selection = TrialFilter.read(dict(request.query_params))
        except FilterError as exc:
            return refused(exc)
        found = sweep_lines(engine=engine, sweep_id=sweep_id)
        if not found:
            return _page(error_page(404, f"no sweep {sweep_id!r} in this database"), 404)
        try:
            # A page's start (`after`) that is no trial of the sweep is refused here too.
            page = trial_page(engine=engine, sweep_id=sweep_id, selection=selection)
        except FilterError as exc:
            return refused(exc)
        return _page(trials_page(sweep_id, selection, page, live=found[0].live))

    def trial(request: Request) -> Response:
        try:
            trial_id = checked_text(request.path_params["trial_id"], name="trial", source="path")
        except FilterError as exc:
            return refused(exc)
        record = trial_record(engine=engine, trial_id=trial_id)
        if record is None:
            return _page(error_page(404, "no trial with that id in this database"), 404)
        return _page(one_trial_page(record))

    def compare(request: Request) -> Response:
        try:
            ids = [checked_text(request.query_params.get(k, ""), name=k) for k in ("a", "b")]
        except FilterError as exc:
            return refused(exc)
        a, b = (trial_record(engine=engine, trial_id=i) for i in ids)
        if a is None or b is None:
            return _page(error_page(404, "compare needs two trial ids, ?a=…&b=…"), 404)
        return _page(compare_page(a, b))

    async def style(_: Request) -> Response:  # no I/O: no thread needed
        return Response(STYLE, media_type="text/css", headers=HEADERS)

    async def icon(_: Request) -> Response:
        # Browsers ask for one on every first page: an answer, not a 404 in every log.
        return Response(ICON, media_type="image/svg+xml", headers=HEADERS)

    async def http_error(_: Request, exc: Exception) -> Response:
        # Starlette's own answers (no such route, a method not allowed) as pages of this app,
        # under its policy, not bare text without one.
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        said = {404: "no such page", 405: "this page is only read (GET)"}
        return _page(error_page(status, said.get(status, str(exc))), status)

    async def server_error(_: Request, exc: Exception) -> Response:
        # A bug: no traceback on the page (it is in the server's log), and the policy still on.
        return _page(error_page(500, "the explorer failed on this page; see its log"), 500)

    def database_error(_: Request, exc: Exception) -> Response:
        # A table or column this code reads is missing: say what to do, in a page. Any other
        # database error, on a database at this farm's version, is a bug: a 500 as ever.
        reason = unreadable(engine)
        if reason is None:
            raise exc
        return _page(error_page(503, reason), 503)

    middleware = [Middleware(HostCheck, host=host)]
    if password:
        middleware.append(Middleware(BasicAuth, user=user, password=password))
    return Starlette(
        exception_handlers={
            OperationalError: database_error,
            ProgrammingError: database_error,
            HTTPException: http_error,
            Exception: server_error,
        },
        routes=[
            Route("/", sweeps),
            Route("/sweeps/{sweep_id}", sweep),
            Route("/sweeps/{sweep_id}/trials", trials),
            Route("/trials/{trial_id}", trial),
            Route("/compare", compare),
            Route("/static/view.css", style),
            Route("/static/icon.svg", icon),
            Route("/favicon.ico", icon),
        ],
        middleware=middleware,
    )


class HostCheck:
    """Only requests addressed to a name this explorer serves (`serves`); any other is refused
    with 421 before anything is read, however the name resolved."""

    def __init__(self, app: ASGIApp, *, host: str) -> None:
        self.app, self.host = app, host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = Request(scope).headers.get("host", "")
            if not serves(header, self.host):
                said = (
                    f"this explorer answers requests to {', '.join(LOOPBACK_NAMES)} or "
                    f"{host_name(self.host)}, not to {host_name(header)!r}"
                )
                refused = _page(error_page(421, said), 421)
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


class BasicAuth:
    """Every request needs the user and password (HTTP basic auth), the stylesheet included."""

    def __init__(self, app: ASGIApp, *, user: str, password: str) -> None:
        self.app, self.user, self.password = app, user, password

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not _authorised(Request(scope), self.user, self.password):
            refused = Response(
                "password required",
                status_code=401,
                headers={**HEADERS, "WWW-Authenticate": 'Basic realm="farm view"'},
            )
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)
