"""`farm view` as a person uses it, in headless Chromium: the sweep list, a scorecard cell
followed to its trials, the outcome filter, a transcript with its failing step named, and the
script payloads a model and a server wrote left inert."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from html import unescape
from urllib.parse import urlencode, urljoin

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from mcp_farm.scheduler.view.app import HEADERS
from tests.distributed.conftest import wait_until
from tests.scheduler.report.test_report_html import _chromium, _run
from tests.scheduler.view.conftest import Recorded, served_url


@pytest.fixture
def served(recorded: Recorded) -> Iterator[str]:
    """`farm view` on a free loopback port; its URL, as it printed it."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcp_farm.scheduler.cli.app",
            "view",
            "--port",
            "0",
            "--data-dir",
            str(recorded.data),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        url = served_url(proc)
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url), url
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def wait_for_card(url: str) -> None:
    wait_until(lambda: "Per model" in httpx.get(url, timeout=30).text, 60, f"the card on {url}")


def dom(chromium: str, url: str) -> str:
    dumped = _run(chromium, "--virtual-time-budget=3000", "--dump-dom", url)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    # The pages need nothing the policy forbids: a refusal would mean a page relies on it.
    console = [line for line in dumped.stderr.splitlines() if "CONSOLE" in line]
    assert console == [], console
    return dumped.stdout


def href(page: str, pattern: str) -> str:
    """The first link whose target matches `pattern`, as the browser holds it."""
    found = re.search(rf'href="([^"]*{pattern}[^"]*)"', page)
    assert found, f"no link matching {pattern}"
    return unescape(found.group(1))


def test_a_person_finds_a_failing_trial_and_reads_why(served: str, recorded: Recorded) -> None:
    chromium = _chromium()
    sweeps = dom(chromium, served)
    assert "<title>Sweeps</title>" in sweeps

    sweep_url = urljoin(served, href(sweeps, f"/sweeps/{recorded.sweep_id}"))
    # The card is built off the request (a loaded machine may take longer than the first
    # request waits): a person sees "being built" and the page reloads; wait for it, bounded.
    wait_for_card(sweep_url)
    scorecard = dom(chromium, sweep_url)
    assert "Per model × configuration" in scorecard
    # The careless model's row: its count of trials is a link to them.
    cell = href(scorecard, r"model=careless&amp;config=native&amp;scenario=fs\.budget-total")
    trials = dom(chromium, urljoin(served, cell))
    assert len(re.findall(r'href="/trials/', trials)) == 2

    # The filter form, submitted with outcome set: a GET of its fields.
    action = href(trials, "/trials")
    fields = dict(re.findall(r'<input name="(\w+)" value="([^"]*)"', trials))
    query = {k: unescape(v) for k, v in fields.items() if v} | {"outcome": "wrong_params"}
    filtered = dom(chromium, urljoin(served, action) + "?" + urlencode(query))
    assert 'value="wrong_params" selected' in filtered
    opened = href(filtered, "/trials/[0-9a-f]+")

    transcript = dom(chromium, urljoin(served, opened))
    failing = r'<td>1</td><td>read_file</td>(?:(?!</tr>).)*class="failed-step">call 1: read_file'
    assert re.search(failing, transcript), "the failing step and its problem are not shown"
    assert "is not a whole value of the result of step 0" in transcript
    # Inert: the payloads are text on the page, not elements, and ran nothing.
    assert re.search(r"<title>Trial [0-9a-f]{12}</title>", transcript), "a payload set the title"
    assert "pwned" not in re.search(r"<title>.*?</title>", transcript).group(0)  # type: ignore[union-attr]
    assert "&lt;script&gt;document.title='pwned-tool'&lt;/script&gt;" in transcript
    assert "&lt;script&gt;document.title='pwned-reply'&lt;/script&gt;" in transcript
    assert "<img" not in transcript and "<script" not in transcript


def test_the_policy_blocks_a_script_that_reached_a_page_anyway() -> None:
    """Defence in depth: were escaping ever missed, the explorer's headers stop the script."""
    chromium = _chromium()

    async def planted(_: Request) -> HTMLResponse:
        body = "<title>clean</title><script>document.title='ran'</script>"
        return HTMLResponse(body, headers=HEADERS)

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    # Listening before the server starts: Chromium's connection waits in the backlog until
    # the server accepts it, so nothing has to wait for the server to be ready.
    listener.listen()
    app = Starlette(routes=[Route("/", planted)])
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        dumped = _run(
            chromium, "--virtual-time-budget=2000", "--dump-dom", f"http://127.0.0.1:{port}/"
        )
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    assert "<title>clean</title>" in dumped.stdout, "the planted script ran"
    assert "script-src 'none'" in dumped.stderr, "Chromium reported no blocked script"


def test_a_page_of_another_site_rebound_to_loopback_reads_nothing(
    served: str, recorded: Recorded
) -> None:
    """DNS rebinding: another site's name resolves to the explorer's address, so the browser
    sends that site's pages there as their own origin. The explorer answers only its own names."""
    chromium = _chromium()
    port = served.rsplit(":", 1)[1].strip("/")
    rebound = _run(
        chromium,
        "--host-resolver-rules=MAP rebound.example 127.0.0.1",
        "--virtual-time-budget=3000",
        "--dump-dom",
        f"http://rebound.example:{port}/sweeps/{recorded.sweep_id}/trials",
    )
    assert rebound.returncode == 0, rebound.stderr[-2000:]
    assert "421" in rebound.stdout and "rebound.example" in rebound.stdout
    assert recorded.sweep_id not in rebound.stdout and "/trials/" not in rebound.stdout
    # The same page by the explorer's own name opens, with its favicon.
    own = dom(chromium, f"{served}sweeps/{recorded.sweep_id}/trials")
    assert recorded.careless[:12] in own and 'rel="icon"' in own
