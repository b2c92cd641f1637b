"""How the farm starts a server defined by `replay: CASSETTE`: the cassette server, over stdio
or over streamable HTTP, with a new MCP session for every trial."""

from __future__ import annotations

from mcp_farm.schema import ServerDef, SharedLaunch

SERVE_MODULE = "mcp_farm.scenarios.cassette.serve"


def replay_definition(server: ServerDef) -> ServerDef:
    """For a `replay:` server, its definition with the cassette server as its command and as
    its shared (HTTP) launch; any other server as it is.

    It is `reset: session`: the cassette server counts repeated calls per MCP session (the
    n-th gets the n-th recorded answer), so every trial needs a session of its own."""
    if server.replay is None:
        return server
    command = ["{python}", "-m", SERVE_MODULE, server.replay]
    if server.ignore:
        command += ["--ignore", server.ignore.model_dump_json()]
    if server.record == "new_episodes":
        # The live server's command comes last, each word as written: the farm fills its
        # placeholders ({sandbox}, {python}) like those of any command.
        live = ["--live-url", server.url] if server.url else ["--live", *(server.command or [])]
        update = {"command": [*command, *live], "url": None, "reset": "session"}
        return server.model_copy(update=update)
    shared = SharedLaunch(command=[*command, "--transport", "http", "--shared", "--port", "{port}"])
    return server.model_copy(update={"command": command, "shared": shared, "reset": "session"})


def probe_refusal(server: str, kind: str) -> str:
    """Why a `state:` probe of any kind cannot look at a server served from its cassette.

    A cassette keeps no state: it gives the n-th identical call the n-th answer recorded for
    it, whatever the trial did before, so even a read call it recorded would judge the
    recording, not this trial (a write made twice would pass). The rest cannot be answered at
    all: control tools are never recorded, and the calls a cassette holds never reach a server
    whose sandbox could show them (under `record: new_episodes` too, where a live server
    answers only what the cassette does not hold)."""
    held = {
        "call": "keeps no state (its answer to the read is the recording's, whatever this "
        "trial wrote)",
        "snapshot": "holds no hidden snapshot (control tools are never recorded)",
    }.get(
        kind,
        "answers the calls it holds from the recording: they never reach a server, so no "
        "sandbox holds what this trial did (a live server behind `record: new_episodes` sees "
        "only the calls the cassette lacks)",
    )
    return (
        f"server {server!r} is served from its cassette, which {held}: probe the live "
        "server, or leave this scenario out of sweeps that replay it"
    )
