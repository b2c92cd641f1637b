"""How to reach an MCP server: a stdio command, an HTTP URL, a cassette, a shared launch."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from mcp_farm.schema.parse.ignore import IgnoreRules
from mcp_farm.schema.parse.regexes import checked_regex
from mcp_farm.schema.parse.strict import Strict
from mcp_farm.schema.placeholders import ENV_PLACEHOLDER
from mcp_farm.schema.specs.environment import ENV_VAR
from mcp_farm.schema.vocab import McpProtocol, Transport

DEFAULT_RESULT_CHARS = 4000
"""Characters of a tool's result the model is shown, unless the server or sweep says otherwise."""


class ResetCall(Strict):
    """A tool call that puts a server back in its starting state (`reset:` of a server)."""

    tool: str
    """The tool's name as the server lists it."""
    arguments: dict[str, Any] = Field(default_factory=dict)


class SharedLaunch(Strict):
    """How to start one server process that many trials of a worker process use at once, each
    over its own MCP session (streamable HTTP), instead of a stdio process per trial.

    Used where a worker runs several sessions per process (`--pool threads --concurrency N`):
    sessions in flight then cost an MCP session each, not a process each. The server must keep
    every session's state apart; a sandboxed one is told its session's folder in a header."""

    command: list[str] = Field(min_length=1)
    """Argv of the server process. `{port}` is a free loopback port the farm picks,
    `{sandboxes}` the folder every trial's sandbox lies in (a server may refuse others);
    `{python}`, `{root}` and `{env:VAR}` as for `command`. Per-trial values (`{sandbox}`,
    `{attached}`) belong in `headers`, since one process serves every trial."""
    url: str = "http://127.0.0.1:{port}/mcp"
    """Where the started process answers MCP over streamable HTTP."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers of each trial's session: `{sandbox}`, `{attached}` and `{env:VAR}` are
    filled in per trial (e.g. `X-Farm-Root: "{sandbox}"` for the fixture servers)."""

    @model_validator(mode="after")
    def _placeholders(self) -> SharedLaunch:
        if "{port}" not in self.url:
            raise ValueError("`url` must contain `{port}` (the port the farm starts it on)")
        for text in [*self.command, self.url]:
            for per_trial in ("{sandbox}", "{attached}"):
                if per_trial in text:
                    raise ValueError(
                        f"`{per_trial}` differs per trial: put it in `headers`, not the command"
                    )
        for text in [*self.command, *self.headers.values()]:
            for name in ENV_PLACEHOLDER.findall(text):
                if not ENV_VAR.fullmatch(name):
                    raise ValueError(f"`{{env:{name}}}` does not name an environment variable")
        return self


class ServerDef(Strict):
    """How to reach one MCP server: a command over stdio, a streamable-HTTP URL, or a recorded
    cassette the farm serves in its place (`replay`)."""

    name: str
    transport: Transport = "stdio"
    command: list[str] | None = None
    """Argv for stdio. `{python}` is this interpreter, `{root}` the repository root, `{sandbox}`
    the trial's fresh sandbox, `{attached}` the trial's server names (comma-separated), and
    `{env:VAR}` the worker's environment variable VAR when the server starts (never stored)."""
    url: str | None = None
    """Endpoint for `http`; may hold `{env:VAR}` placeholders."""
    replay: str | None = None
    """A cassette file (docs/cassettes.md) to serve instead of a running server: an absolute
    path, or one relative to the file that defines the server. It stands in for `command`,
    `url`, `env`, `sandbox`, `shared` and `reset`; the farm starts the cassette server over
    stdio, or over streamable HTTP with `transport: http` or when a worker runs several
    sessions. A call the cassette never recorded is a tool error, and its trial is marked as
    having left the cassette."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment of a stdio server, beyond the few variables it inherits; values take the
    same placeholders as `command`, so a secret comes from the worker as `{env:VAR}`."""
    sandbox: str | None = None
    """A folder copied fresh for every trial: a name under scenarios/fixtures (`home`,
    `code/h11`), an absolute path, or a path starting with `./` or `../`, relative to the file
    that defines the server. It must exist when the file is loaded."""
    reuse: bool = True
    """Keep the server running across trials (its sandbox folder is reset before each trial
    that follows one which used it). Set false for a server that keeps state in memory."""
    description: str = ""
    """For people: listings and docs. The model never sees it (see `instructions`)."""
    reset: Literal["session"] | ResetCall | None = None
    """How the server's state is made fresh for each trial where the farm cannot do it by
    restarting it or copying its sandbox back (an HTTP server it does not start, state kept
    outside a sandbox). `session`: the server keeps each MCP session's state apart, so a new
    session starts clean; every trial gets a new session (over stdio, a new process).
    `{tool: ..., arguments: {...}}`: a call the farm makes before every
    trial that attaches the server, recorded with its setup calls (one that fails makes the
    trial an infra_error). Either lets `setup:` seed the server; the self-checks probe the
    claim by running a trial after a seeded one."""
    instructions: str = ""
    """What the model is told about this server, in every prompt mode, after whatever the
    server says about itself in its initialize reply (as real MCP clients pass it on): how
    its paths resolve, what its data holds. Shown in the system prompt."""
    record: Literal["none", "new_episodes"] = "none"
    """For a `replay:` server. `none`: only what the cassette holds is served. `new_episodes`:
    a call the cassette does not hold goes to the live server, given by `command` (with `env`
    and `sandbox`) or `url`, started at the first such call of a trial; its answer is served
    and added to the cassette (a cassette file not there yet is begun from the live server's
    tool list). Served over stdio, one cassette process and one live server per trial."""
    error_pattern: str | None = None
    """A regular expression searched in a result's text (case-sensitive, `^` at any line) that
    marks a result the server did not flag as an error as failed, for servers that answer a
    failure with `Error: …` text. Such a result does not do a step, meets `expect_error`, and
    fails a `setup:` call."""
    result_chars: int = Field(default=DEFAULT_RESULT_CHARS, ge=1)
    """Characters of one result the model is shown; a longer result is cut, and the model is
    told how much was left out. Chained values are matched against the whole result."""
    shared: SharedLaunch | None = None
    """Optional: one process for many concurrent trials (see SharedLaunch). Without it, each
    trial in flight has a process of its own."""
    protocol: McpProtocol = "legacy"
    """How the farm opens the session: `legacy` (the `initialize` handshake) or `2026-07-28`
    (`server/discover`, then requests that each carry the protocol version; a server asks the
    user through the `input_required` round trip). Not for a `replay:` server, which the farm
    serves over the handshake."""
    ignore: IgnoreRules = Field(default_factory=IgnoreRules)
    """Values this server gives differently every time (timestamps, random ids), by JSON path
    or regex: left out of `farm replay`'s diffs and of cassette matching (its calls'
    arguments, and which answers count as new when capturing). A suite's `ignore:` adds to it."""

    @field_validator("error_pattern")
    @classmethod
    def _pattern_compiles(cls, pattern: str | None) -> str | None:
        return checked_regex(pattern)

    @model_validator(mode="after")
    def _transport_fields(self) -> ServerDef:
        if self.replay is not None:
            return self._replay_alone()
        if self.record != "none":
            raise ValueError("`record` is for a `replay:` server (a cassette)")
        if self.transport == "stdio" and not self.command:
            raise ValueError("a stdio server needs `command`")
        if self.transport == "http" and not self.url:
            raise ValueError("an http server needs `url`")
        if self.protocol != "legacy" and self.transport == "http" and self.reset == "session":
            raise ValueError(
                f"`reset: session` over http needs the `legacy` protocol: at {self.protocol} "
                "there is no MCP session for the server to keep state apart by"
            )
        texts = [*(self.command or []), *self.env.values(), self.url or ""]
        for text in texts:
            for name in ENV_PLACEHOLDER.findall(text):
                if not ENV_VAR.fullmatch(name):
                    raise ValueError(f"`{{env:{name}}}` does not name an environment variable")
        if self.shared is not None:
            for value in self.env.values():
                if "{sandbox}" in value or "{attached}" in value:
                    # The shared process's environment is set once, for every trial.
                    raise ValueError(
                        "a server with a `shared:` launch cannot use `{sandbox}` or "
                        "`{attached}` in `env`: pass them per trial in `shared.headers`"
                    )
            texts += list(self.shared.headers.values())
        if self.sandbox is None and any("{sandbox}" in text for text in texts):
            raise ValueError("`{sandbox}` is used but no `sandbox:` folder is given to copy")
        return self

    def _replay_alone(self) -> ServerDef:
        if not self.replay:
            raise ValueError("`replay` needs the path of a cassette file")
        if self.protocol != "legacy":
            # The cassette server asks through elicitation/create; it has no round trip to replay.
            raise ValueError(
                "a `replay:` server is served over the `legacy` handshake: leave out `protocol`"
            )
        if self.record == "new_episodes":
            return self._recording_live()
        given = [
            name
            for name in ("command", "url", "env", "sandbox", "shared", "reset")
            if getattr(self, name)
        ]
        if given:
            fields = ", ".join(f"`{name}`" for name in given)
            raise ValueError(
                f"a `replay:` server is the cassette, served by the farm: leave out {fields} "
                "(or give `record: new_episodes` to send what it does not hold to them)"
            )
        return self

    def _recording_live(self) -> ServerDef:
        if bool(self.command) == bool(self.url):
            raise ValueError(
                "`record: new_episodes` needs the live server: `command` or `url`, one of them"
            )
        given = [name for name in ("shared", "reset") if getattr(self, name)]
        if self.transport != "stdio" or given:
            named = [*given, *(["transport"] if self.transport != "stdio" else [])]
            fields = ", ".join(f"`{name}`" for name in named)
            raise ValueError(
                "a cassette recording new episodes is served over stdio, one process per "
                f"trial: leave out {fields}"
            )
        if self.sandbox is None and any("{sandbox}" in t for t in self.command or []):
            raise ValueError("`{sandbox}` is used but no `sandbox:` folder is given to copy")
        return self
