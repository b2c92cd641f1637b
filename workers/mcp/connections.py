"""A trial's view of its MCP servers: sessions lent by the pool, the tools they offer, and each
call made on them as the trial records it (`execute`, `recorded`): a call's path stays here."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, MCPError
from mcp.types import CallToolResult, TextContent, Tool
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from mcp_farm.schema import (
    DEFAULT_RESULT_CHARS,
    PatternTimeout,
    ServerDef,
    ServerStart,
    ToolCallRecord,
    budgeted_search,
    canonical_json,
    digest,
)
from mcp_farm.schema.specs import DISTRACTOR_SERVER
from mcp_farm.workers.clock import clock_stopped
from mcp_farm.workers.errors import InfraError
from mcp_farm.workers.mcp.capture import Capture, is_control, left_cassette
from mcp_farm.workers.mcp.elicit import Asked
from mcp_farm.workers.mcp.pool import (
    ListChanges,
    LiveServer,
    ServerPool,
)
from mcp_farm.workers.mcp.roundtrip import call_tool
from mcp_farm.workers.model.safejson import as_json_text, shorten, wire_problem
from mcp_farm.workers.model.toolspec import ParsedCall, ToolSpec
from mcp_farm.workers.selection import Selector


@dataclass
class Connected:
    """The live sessions of one trial and the tools they offer, by the name the model sees."""

    sessions: dict[str, ClientSession]
    tools: dict[str, ToolSpec]
    touched: set[str] = field(default_factory=set)
    """Servers that had a call that may have changed their state."""
    servers: dict[str, ServerDef] = field(default_factory=dict)
    """The attached servers' definitions, by name."""
    result_chars: int | None = None
    """The sweep's limit on result text shown to the model; None: each server's own."""
    instructions: dict[str, str] = field(default_factory=dict)
    """Per attached server, what the model is told about it: the server's own initialize
    instructions, then its definition's `instructions`; servers with neither are left out."""
    capture: Capture | None = None
    """Where the trial's exchanges are recorded into cassettes; None: nowhere."""
    left_cassette: bool = False
    """Whether a call got a cassette server's answer for a call it never recorded."""
    naming: str = "plain"
    """How tools are shown to the model (`shown_name`), for tools listed mid-session."""
    changes: dict[str, ListChanges] = field(default_factory=dict)
    """Per attached server, its tool-list change notifications (workers/mcp/relist.py)."""
    relisted: dict[str, int] = field(default_factory=dict)
    """Per server, how many of its notifications the trial's tool list already follows."""
    added: set[str] = field(default_factory=set)
    """Tools (shown names) a server listed anew during the trial."""
    removed: dict[str, str] = field(default_factory=dict)
    """Tools (shown names) a server stopped listing during the trial, and which server."""
    asked: Asked = field(default_factory=Asked)
    """The trial's elicitation script and record, which every leased session answers from."""
    control: dict[str, set[str]] = field(default_factory=dict)
    """Per attached server, the control tools it lists for the farm only (`_meta` marks them,
    CONTROL_META): a state snapshot, a restore, a hidden trigger. Never offered to the model."""
    sandboxes: dict[str, Path] = field(default_factory=dict)
    """Per attached server with a sandbox, the trial's copy of it (what file and SQLite
    probes look in)."""
    selector: Selector | None = None
    """Tool selection before the model (a prompt config's `select:`); None: all tools shown."""
    listed: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per attached server, per tool it listed, the digests of its description and schemas
    (`tool_fingerprint`): what a replay compares to say which tools changed."""
    starts: dict[str, ServerStart] = field(default_factory=dict)
    """Per attached server, how its process started (forked, fresh, or at a URL)."""

    async def call(self, server: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call a tool of an attached server; a question it asks through the `input_required`
        round trip is answered as an `elicitation/create` is (workers/mcp/roundtrip.py)."""
        return await call_tool(self.sessions[server], tool, arguments)

    def limit(self, server: str) -> int:
        """Characters of a result of `server` the model is shown."""
        if self.result_chars is not None:
            return self.result_chars
        found = self.servers.get(server)
        return found.result_chars if found else DEFAULT_RESULT_CHARS

    def reported_error(self, server: str, text: str) -> bool:
        """Whether a result the server did not flag is a failure by its `error_pattern`;
        InfraError when the pattern runs past its time budget on the text."""
        found = self.servers.get(server)
        pattern = found.error_pattern if found else None
        if pattern is None:
            return False
        try:
            hit = budgeted_search(pattern, text, field="error_pattern", flags=re.MULTILINE)
        except PatternTimeout as exc:
            raise InfraError(f"server {server}: {exc}") from None
        return hit is not None


async def reselect(conn: Connected, said: str, expected: list[str]) -> bool:
    """Under selection, show the model the tools selected for what the user said (`expected`:
    the real tools this message should lead to, for its recall); whether the tools shown
    changed. Without selection, nothing changes."""
    if conn.selector is None:
        return False
    before = list(conn.tools.values())
    conn.tools = await conn.selector.select(said, expected)
    return list(conn.tools.values()) != before


def elicit_problem(connected: Connected) -> None:
    """InfraError when a scripted elicitation answer could not be sent during the last call:
    the scenario's error (content that does not fit the request), never the model's."""
    if connected.asked.problem:
        problem, connected.asked.problem = connected.asked.problem, ""
        raise InfraError(problem)


def add_tools(connected: Connected, server: str, tools: list[Tool]) -> None:
    """Offer a server's listed tools to the model, by the names it sees them by; InfraError
    when two servers list the same shown name."""
    connected.control[server] = set()
    for tool in tools:
        if is_control(tool):
            connected.control[server].add(tool.name)
            continue
        name = shown_name(server, tool.name, connected.naming)
        if name in connected.tools and connected.tools[name].server != server:
            # Not the model's fault: the trial cannot be a fair test of either tool.
            raise clash(name, connected.tools[name].server, server)
        connected.tools[name] = ToolSpec(
            shown_name=name,
            server=server,
            tool=tool.name,
            description=tool.description or "",
            input_schema=dict(tool.input_schema or {}),
            read_only=bool(tool.annotations and tool.annotations.read_only_hint),
            destructive=bool(tool.annotations and tool.annotations.destructive_hint is True),
            meta={k: str(v) for k, v in (tool.meta or {}).items() if k.startswith("farm/")},
        )


def shown_name(server: str, tool: str, naming: str) -> str:
    return f"{server}__{tool}" if naming == "server_prefixed" else tool


def clash(name: str, first: str, second: str) -> InfraError:
    """Two servers list the same shown name: the trial cannot be a fair test of either."""
    return InfraError(
        f"servers {first!r} and {second!r} both list a tool named {name!r}, so the model could "
        "reach only one of them: add `tool_naming: server_prefixed` to the sweep (tools shown "
        "as server__tool), use the `native-prefixed` prompt config, or attach only one of the "
        "two servers"
    )


@asynccontextmanager
async def connect(
    servers: list[ServerDef],
    pool: ServerPool,
    naming: str,
    result_chars: int | None = None,
    capture: Capture | None = None,
    clock: anyio.CancelScope | None = None,
) -> AsyncIterator[Connected]:
    """Borrow every server the trial needs; give them back healthy only if the trial ended
    without an exception (a timeout, a crash or a cancellation stops them instead). With a
    `capture`, what each server lists and answers is recorded. The scenario's `clock` is held
    while servers start: start-up has its own limit, and is never the scenario's time."""
    # The distractors are the farm's, not the scenario's: a server reporting what is attached
    # (gaia) tells of the scenario's own.
    attached = [s.name for s in servers if s.name != DISTRACTOR_SERVER]
    lent: list[LiveServer] = []
    healthy = False
    connected = Connected(
        sessions={},
        tools={},
        servers={s.name: s for s in servers},
        result_chars=result_chars,
        capture=capture,
        naming=naming,
    )
    try:
        with clock_stopped(clock):
            for server in servers:
                lent.append(await pool.acquire(server, attached))
        for live in lent:
            connected.sessions[live.server.name] = live.session
            if live.sandbox is not None:
                connected.sandboxes[live.server.name] = live.sandbox
            if capture is not None:
                capture.listed(live.server, live.tools, live.instructions)
            told = "\n".join(t for t in (live.instructions, live.server.instructions.strip()) if t)
            if told:
                connected.instructions[live.server.name] = told
            connected.listed[live.server.name] = {t.name: tool_fingerprint(t) for t in live.tools}
            connected.starts[live.server.name] = live.started
            # Changes before this trial (the pool's reset undoing the last one) are not its own.
            connected.changes[live.server.name] = live.changes
            connected.relisted[live.server.name] = live.changes.seen
            add_tools(connected, live.server.name, live.tools)
            if live.elicit is not None:
                live.elicit.asked = connected.asked
        yield connected
        healthy = True
    finally:
        for live in lent:
            if live.elicit is not None:
                live.elicit.asked = None
            pool.release(live, healthy=healthy, dirty=live.server.name in connected.touched)


LOST_CODES = {CONNECTION_CLOSED: "the connection closed", REQUEST_TIMEOUT: "the request timed out"}
"""JSON-RPC error codes the MCP SDKs give a call whose answer can never come (the server died,
its stream broke): the server did not refuse the call, it went away."""


def refusal(server: str, tool: str, exc: MCPError) -> CallToolResult:
    """A JSON-RPC error the server answered a call with, as the failed result the model is
    shown (`MCP error <code>: <message>`, the data after it); InfraError when the error says
    the server went away instead (`LOST_CODES`)."""
    if exc.code in LOST_CODES:
        raise InfraError(
            f"server {server} was lost during a call of {tool}: {LOST_CODES[exc.code]} "
            f"({exc.message})"
        )
    text = f"MCP error {exc.code}: {exc.message}"
    if exc.data is not None:
        text += f"\n{as_json_text(exc.data)}"
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


WHOLE_KEEP_CHARS = 1_000_000
"""Characters of a result kept in memory for chained values, whatever the model was shown: a
bound on what one pathological result can cost a worker."""

WHOLE_STORE_CHARS = 200_000
"""Characters of a result's whole text, and of its structured content as JSON, stored for
replay beyond what the transcript holds; past it the digests still tell a change apart."""


def _recordable(arguments: dict[Any, Any]) -> dict[str, Any]:
    """The arguments with string keys, as a ToolCallRecord holds them."""
    return {k if isinstance(k, str) else shorten(k): v for k, v in arguments.items()}


async def execute(call: ParsedCall, index: int, conn: Connected) -> ToolCallRecord:
    """Run one call on the server that owns the tool; unknown tools, tool errors and JSON-RPC
    errors are recorded as failed calls."""
    spec = conn.tools.get(call.name)
    if spec is None:
        gone = conn.removed.get(call.name)
        return ToolCallRecord(
            index=index,
            server=None,
            tool=call.name,
            arguments=_recordable(call.arguments),
            ok=False,
            error=f"unknown tool {shorten(call.name)}"
            + (f": server {gone} no longer offers it" if gone else ""),
        )
    problem = wire_problem(call.arguments)
    if problem:
        # The decoders let no such call through; an adapter from elsewhere might. The server
        # never sees it, and the call is graded like any call that failed.
        return ToolCallRecord(
            index=index,
            server=spec.server,
            tool=spec.tool,
            arguments=_recordable(call.arguments),
            ok=False,
            error=f"arguments not sent: {problem}",
        )
    if not spec.read_only:
        conn.touched.add(spec.server)
    started = time.perf_counter()
    conn.asked.call = index  # an elicitation during this call is recorded as this call's
    try:
        result = await conn.call(spec.server, spec.tool, call.arguments)
    except MCPError as exc:  # the server refused the call over JSON-RPC: the call failed
        result = refusal(spec.server, spec.tool, exc)
    finally:
        conn.asked.call = None
    elicit_problem(conn)
    latency = time.perf_counter() - started
    return recorded(index, spec.server, spec.tool, call.arguments, result, latency, conn)


def failure_text(record: ToolCallRecord, conn: Connected) -> str:
    """What the model is shown of a failed call: `Error: …`, except for a result that only the
    server's `error_pattern` marks, which the model sees as the server wrote it."""
    if record.server is not None and conn.reported_error(record.server, record.whole_result):
        return record.result_text
    return f"Error: {record.error}"


def shown_text(text: str, limit: int) -> str:
    """What the model is shown of a result: all of it, or its first `limit` characters and a
    line saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[result cut: {len(text) - limit} more characters not shown]"


def recorded(
    index: int,
    server: str,
    tool: str,
    arguments: dict[str, Any],
    result: Any,
    latency: float,
    conn: Connected,
) -> ToolCallRecord:
    """One executed call as the trial records it. A result the server flagged, or whose text
    its `error_pattern` marks, is a failed call. The whole result goes to the trial's capture,
    if it has one; a cassette's answer to a call it never recorded marks the trial."""
    if conn.capture is not None:
        conn.capture.called(server, tool, arguments, result, latency, conn.asked.exchanges)
    if left_cassette(result):
        conn.left_cassette = True
    text = result_text(result)
    failed = bool(result.is_error) or conn.reported_error(server, text)
    limit = conn.limit(server)
    shown = shown_text(text, limit)
    return ToolCallRecord(
        index=index,
        server=server,
        tool=tool,
        arguments=arguments,
        ok=not failed,
        error=text[:500] if failed else None,
        result_text=shown,
        whole_text=text[:WHOLE_KEEP_CHARS] if shown != text else "",
        # surrogatepass: a server's text may hold a lone surrogate, which plain UTF-8 refuses.
        result_digest=_sha256(text),
        whole_json=whole_record(text, shown, failed, result),
        latency_s=latency,
    )


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def whole_record(text: str, shown: str, failed: bool, result: Any) -> str:
    """What replay needs of a result beyond the transcript's tool message: the whole text when
    the message is not it (cut, or a failure shown as `Error: …`), and the structured content
    with its digest; each part up to WHOLE_STORE_CHARS (see ToolCallRecord.whole_json)."""
    whole: dict[str, Any] = {}
    if failed or shown != text:
        whole["text"] = text[:WHOLE_STORE_CHARS]
        if len(text) > WHOLE_STORE_CHARS:
            whole["text_cut"] = True
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        as_json = canonical_json(structured)
        whole["structured_digest"] = _sha256(as_json)
        if len(as_json) <= WHOLE_STORE_CHARS:
            whole["structured"] = structured
        else:
            whole["structured_cut"] = True
    return canonical_json(whole)


def tool_fingerprint(tool: Any) -> str:
    """A listed tool as `d:<digest of its description> s:<digest of its schemas>`."""
    described = digest(tool.description or "")[:12]
    schemas = digest([tool.input_schema or {}, tool.output_schema])[:12]
    return f"d:{described} s:{schemas}"


def result_text(result: Any) -> str:
    """A CallToolResult as text for the model, the way MCP clients show it: text blocks as
    they are, other blocks described by what identifies them (see `block_text`), and the
    structured content as JSON when the blocks say nothing."""
    text = "\n".join(block_text(block) for block in result.content)
    structured = getattr(result, "structured_content", None)
    if not text.strip() and structured is not None:
        return as_json_text(structured)
    return text


def block_text(block: Any) -> str:
    """One content block as text. A bare `[image]` would leave a scenario about a linked or
    embedded resource unanswerable, so links give their URI, name, type and description,
    embedded text resources their URI and text, and binary data its type and size."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if kind == "resource_link":
        title = block.title if block.title and block.title != block.name else None
        head = f"[resource link: {block.uri}] {block.name}" + (f" ({title})" if title else "")
        facts = [f"type {block.mime_type}" if block.mime_type else None]
        facts.append(f"{block.size} bytes" if block.size is not None else None)
        shown = ", ".join(f for f in facts if f)
        lines = [head + (f"; {shown}" if shown else "")]
        return "\n".join([*lines, block.description] if block.description else lines)
    if kind == "resource":
        resource = block.resource
        mime = f" ({resource.mime_type})" if resource.mime_type else ""
        text = getattr(resource, "text", None)
        if text is not None:
            return f"[resource: {resource.uri}{mime}]\n{text}"
        blob = getattr(resource, "blob", "")
        decoded = _text_blob(blob, resource.mime_type)
        if decoded is not None:
            return f"[resource: {resource.uri}{mime}]\n{decoded}"
        size = _decoded_size(blob)
        return f"[resource: {resource.uri}{mime}, {size} bytes of binary data]"
    return f"[{kind or 'content'}]"


TEXT_TYPES = ("text/", "application/json", "application/xml", "application/yaml")
"""Media types whose blob is shown as the text it encodes (UTF-8), as a text resource is."""


def _text_blob(data: str, mime_type: str | None) -> str | None:
    """The text a blob resource of a text type holds; None for binary or undecodable data."""
    kind = (mime_type or "").split(";")[0].strip().lower()
    if not kind.startswith(TEXT_TYPES) and not kind.endswith(("+json", "+xml")):
        return None
    try:
        return base64.b64decode(data, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _decoded_size(data: str) -> int:
    """Bytes that base64 text stands for, without decoding it (it may be megabytes)."""
    body = data.strip()
    return len(body) * 3 // 4 - (len(body) - len(body.rstrip("=")))
