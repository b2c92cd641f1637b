"""`farm view`'s HTTP server: uvicorn's HTTP/1.1 protocol (h11), named, not picked by what
happens to be installed, whose own refusal of a request it cannot parse (a malformed request
line or header, sent before the app sees anything) carries the explorer's security headers,
its content security policy included, like every answer of the app."""

from __future__ import annotations

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from mcp_farm.scheduler.view.app import HEADERS

REFUSAL_HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-type", b"text/plain; charset=utf-8"),
    (b"connection", b"close"),
    *((name.lower().encode("ascii"), value.encode("ascii")) for name, value in HEADERS.items()),
]


class ExplorerProtocol(H11Protocol):
    """uvicorn's h11 protocol; its 400 for an unparsable request says the same as uvicorn's
    (`Invalid HTTP request received.`) under the explorer's headers."""

    def send_400_response(self, msg: str) -> None:
        event = h11.Response(status_code=400, headers=REFUSAL_HEADERS, reason=b"Bad Request")
        for part in (event, h11.Data(data=msg.encode("ascii")), h11.EndOfMessage()):
            self.transport.write(self.conn.send(part) or b"")
        self.transport.close()
