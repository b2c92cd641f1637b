"""What the server answers before the app sees a request (a malformed request line or header)
carries the explorer's content security policy and other headers, as every page does."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
import uvicorn
from starlette.applications import Starlette

from mcp_farm.scheduler.view.app import CSP
from mcp_farm.scheduler.view.serving import ExplorerProtocol


@pytest.fixture
def port() -> Iterator[int]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    # Listening before the server starts: a connection waits in the backlog until accepted.
    listener.listen()
    config = uvicorn.Config(
        Starlette(), log_level="critical", lifespan="off", http=ExplorerProtocol
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _answer(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /\x00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"NOT A REQUEST LINE\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n",
    ],
    ids=["nul-in-target", "no-request-line", "header-without-colon"],
)
def test_the_servers_own_400_carries_the_content_security_policy(
    port: int, request_bytes: bytes
) -> None:
    answer = _answer(port, request_bytes)
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith("HTTP/1.1 400"), lines[0]
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert headers["content-security-policy"] == CSP
    assert headers["x-content-type-options"] == "nosniff"
    assert body == b"Invalid HTTP request received."
