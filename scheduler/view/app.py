"""`farm view`: the trial explorer as a Starlette app over the results database, read only.

Every response carries a content security policy that allows no script at all and styles only
from this app (`/static/view.css`, a package file); every text a model, a server or a user wrote
is escaped (scheduler/view/html.py). It listens on loopback; anywhere else needs a password,
asked for with HTTP basic auth on every request."""

from __future__ import annotations

import base64
import binascii
import ipaddress
import secrets
from importlib.resources import files
from typing import TYPE_CHECKING

from sqlalchemy.exc import OperationalError, ProgrammingError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_farm.scheduler.scorecard.build import build_scorecard
from mcp_farm.scheduler.scorecard.queries.stored import stored_scorecard
from mcp_farm.scheduler.view.filters import FilterError, TrialFilter
from mcp_farm.scheduler.view.pages import error_page, sweep_page, sweeps_page, trials_page
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


def create_app(engine: Engine, *, user: str = "farm", password: str | None = None) -> Starlette:
    """The explorer over `engine` (opened read only by the caller). The handlers that read
    the database are plain functions: Starlette runs them in its thread pool, so one slow
    query holds up its own request, not every other."""

    def sweeps(_: Request) -> Response:
        return _page(sweeps_page(sweep_lines(engine=engine)))

    def sweep(request: Request) -> Response:
        sweep_id = request.path_params["sweep_id"]
        found = sweep_lines(engine=engine, sweep_id=sweep_id)
        if not found:
            return _page(error_page(404, f"no sweep {sweep_id!r} in this database"), 404)
        card = stored_scorecard(engine=engine, sweep_id=sweep_id)
        if card is None or card.done < card.total or found[0].live:
            # Still running, or never aggregated: built now, shown, not stored (read only).
            card = build_scorecard(engine=engine, sweep_id=sweep_id)
        return _page(sweep_page(found[0], card))

    def trials(request: Request) -> Response:
        sweep_id = request.path_params["sweep_id"]
        found = sweep_lines(engine=engine, sweep_id=sweep_id)
        if not found:
            return _page(error_page(404, f"no sweep {sweep_id!r} in this database"), 404)
        try:
            selection = TrialFilter.read(dict(request.query_params))
        except FilterError as exc:
            return _page(error_page(400, str(exc)), 400)
        page = trial_page(engine=engine, sweep_id=sweep_id, selection=selection)
        return _page(trials_page(sweep_id, selection, page, live=found[0].live))

    def trial(request: Request) -> Response:
        record = trial_record(engine=engine, trial_id=request.path_params["trial_id"])
        if record is None:
            return _page(error_page(404, "no trial with that id in this database"), 404)
        return _page(one_trial_page(record))

    def compare(request: Request) -> Response:
        a = trial_record(engine=engine, trial_id=request.query_params.get("a", ""))
        b = trial_record(engine=engine, trial_id=request.query_params.get("b", ""))
        if a is None or b is None:
            return _page(error_page(404, "compare needs two trial ids, ?a=…&b=…"), 404)
        return _page(compare_page(a, b))

    async def style(_: Request) -> Response:  # no I/O: no thread needed
        return Response(STYLE, media_type="text/css", headers=HEADERS)

    def database_error(_: Request, exc: Exception) -> Response:
        # A table or column this code reads is missing: say what to do, in a page. Any other
        # database error, on a database at this farm's version, is a bug: a 500 as ever.
        reason = unreadable(engine)
        if reason is None:
            raise exc
        return _page(error_page(503, reason), 503)

    middleware = [Middleware(BasicAuth, user=user, password=password)] if password else []
    return Starlette(
        exception_handlers={OperationalError: database_error, ProgrammingError: database_error},
        routes=[
            Route("/", sweeps),
            Route("/sweeps/{sweep_id}", sweep),
            Route("/sweeps/{sweep_id}/trials", trials),
            Route("/trials/{trial_id}", trial),
            Route("/compare", compare),
            Route("/static/view.css", style),
        ],
        middleware=middleware,
    )


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
