"""Serving an ASGI app on a bound loopback socket for as long as a block runs: the recording
proxy's MCP endpoints and the model pass-through both serve this way."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from typing import Any

import anyio
import uvicorn

STARTED_WITHIN_S = 10.0
"""How long uvicorn may take to start serving a socket already bound."""


class _Quiet(uvicorn.Server):
    """uvicorn without its signal handlers: the worker's own stay in charge."""

    def capture_signals(self) -> Any:
        return nullcontext()


@asynccontextmanager
async def served(app: Any, sock: socket.socket) -> AsyncIterator[None]:
    """Serve `app` on `sock` (bound by the caller, who closes it) from when it is serving until
    the block ends."""
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    web = _Quiet(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(web.serve, [sock])
        with anyio.fail_after(STARTED_WITHIN_S):
            while not web.started:
                await anyio.sleep(0.01)
        try:
            yield
        finally:
            web.should_exit = True
